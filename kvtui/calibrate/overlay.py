"""The fitted profile as a file a scenario loads (`profiles: [FILE]`, or `--set profiles=[FILE]`):
a `hardware:` entry with the fitted knobs over the cluster hardware's other figures, and the
model's entry when it came from a config.json, each with `calibrated_from:` (the report and the
date). Scenarios then name the hardware (`cluster.hardware: h100-80gb-calibrated`)."""

from __future__ import annotations

import datetime

import yaml

from kvtui.calibrate.calibration import Calibration


def overlay(cal: Calibration, today: datetime.date | None = None) -> dict:
    date = (today or datetime.date.today()).isoformat()
    origin = f"{cal.report.format} report {cal.report.path}, stage(s) {', '.join(map(str, cal.fit_stages))}, on {date}"
    hw = {**cal.setup.figures, **{k: round(v, 6) for k, v in cal.fitted.items()},
          "source": f"kvtui calibrate: the knobs fitted, the other figures {cal.setup.figures['source']}",
          "calibrated_from": origin}
    hw = {k: v for k, v in hw.items() if v is not None}
    doc: dict = {"hardware": {cal.setup.hardware: hw}}
    if cal.report.model_figures is not None:
        doc["models"] = {cal.setup.model: {**cal.report.model_figures, "calibrated_from": origin}}
    return doc


def overlay_text(cal: Calibration) -> str:
    text = ("# Written by `kvtui calibrate`: load it with `profiles: [this file]` in a scenario (or\n"
            f"# --set profiles=[this file]) and name `cluster.hardware: {cal.setup.hardware}`.\n")
    return text + yaml.safe_dump(overlay(cal), sort_keys=False, width=100)
