"""One registry per extension point (docs/architecture.md): each row resolves to a real
implementation, and no implementation is left out of its registry."""

from __future__ import annotations

import importlib
import pkgutil
import typing

import pytest

import kvtui.sim.router
from kvtui.scenario.model import Trace
from kvtui.scenario.policies import POLICIES, POLICY_NAMES
from kvtui.scenario.schema import field_types, literal_choices
from kvtui.scenario.trace_formats import TRACE_FORMAT_NAMES, TRACE_FORMATS, format_of_file
from kvtui.sim.router.base import Policy
from kvtui.sim.router.pair import PairPolicy
from kvtui.sim.router.registry import make_policy, policy_class
from kvtui.sim.workload.reader import reader_class


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_policy_row_names_a_policy_class(name):
    cls = policy_class(name)
    assert issubclass(cls, Policy) and cls is not Policy
    assert isinstance(make_policy(name), cls)


def test_every_policy_class_has_a_row():
    for info in pkgutil.iter_modules(kvtui.sim.router.__path__, "kvtui.sim.router."):
        importlib.import_module(info.name)
    interfaces = {PairPolicy}  # the base of prefill/decode policies, an interface as Policy is
    defined = {f"{c.__module__}:{c.__qualname__}" for c in _subclasses(Policy) - interfaces}
    listed = {row.implementation for row in POLICIES.values()}
    assert defined == listed


def test_an_unknown_policy_names_the_known_ones():
    with pytest.raises(KeyError, match="round_robin"):
        policy_class("no_such_policy")


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


@pytest.mark.parametrize("name", TRACE_FORMAT_NAMES)
def test_every_trace_format_row_names_a_reader(name):
    cls = reader_class(name)
    assert isinstance(cls, type) and cls.__module__.startswith("kvtui.sim.workload.")


def test_the_scenario_takes_its_trace_formats_from_the_registry():
    _field, hint = field_types(Trace)["format"]
    assert literal_choices(hint) == TRACE_FORMAT_NAMES
    assert set(typing.get_args(hint)) == set(TRACE_FORMATS)


@pytest.mark.parametrize(
    "is_dir, suffix, expected",
    [(True, "", "weka"), (False, ".json", "weka"), (False, ".csv", "azure"), (False, ".jsonl", "mooncake"), (False, ".txt", None)],
)
def test_a_file_name_says_its_format(is_dir, suffix, expected):
    assert format_of_file(is_dir, suffix) == expected


def test_every_panel_has_a_tab_and_a_narrow_rule():
    from kvtui.tui.panels import PANELS, narrow_css

    ids = [p.id for p in PANELS]
    assert len(set(ids)) == len(ids)
    css = narrow_css()
    assert all(f".-narrow.-view-{i} #{i} {{ display: block;" in css for i in ids)
