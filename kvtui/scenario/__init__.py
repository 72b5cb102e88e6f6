"""Scenario files: the typed model, the YAML loader (with `--set` overrides) and its JSON Schema."""

from kvtui.scenario.loader import load_scenario
from kvtui.scenario.model import Scenario
from kvtui.scenario.schema import scenario_json_schema

__all__ = ["Scenario", "load_scenario", "scenario_json_schema"]
