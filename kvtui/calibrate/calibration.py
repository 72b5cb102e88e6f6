"""A calibration from start to end: rebuild, simulate with the profile's knobs (out of the box),
fit the knobs on the fit stages, simulate every stage with the fitted knobs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvtui.calibrate.accuracy import residuals
from kvtui.calibrate.fit import FitResult, fit
from kvtui.calibrate.rebuild import MEASURED_REQUESTS, Setup, prepare, stage_run, with_knobs
from kvtui.calibrate.report import Report
from kvtui.calibrate.simulate import Simulated, simulate
from kvtui.errors import InputError
from kvtui.scenario.model import Scenario


@dataclass(frozen=True)
class Calibration:
    report: Report
    setup: Setup
    fit_stages: tuple[int, ...]  # stage indices (the report's own numbering)
    result: FitResult
    before: tuple[Simulated, ...]  # every stage, the profile's knobs
    after: tuple[Simulated, ...]  # every stage, the fitted knobs

    @property
    def start(self) -> dict[str, float]:
        return self.setup.start

    @property
    def fitted(self) -> dict[str, float]:
        return self.result.values

    def role(self, index: int) -> str:
        return "fit" if index in self.fit_stages else "heldout"


def calibrate(report: Report, base: Scenario, model_given: bool = False, fit_stages: list[int] | None = None,
              target: int = MEASURED_REQUESTS) -> Calibration:
    setup = prepare(report, base, model_given)
    indices = [s.index for s in report.stages]
    chosen = tuple(fit_stages) if fit_stages else (indices[0],)
    for k in chosen:
        if k not in indices:
            raise InputError.one("--fit-stage", None, f"{k} is not a stage of the report (stages: {', '.join(map(str, indices))})")
    seed = base.seed

    def run_all(values: dict[str, float], which) -> list[Simulated]:
        scenario = with_knobs(setup, values)
        return [simulate(stage_run(report, s, scenario, target), seed) for s in which]

    fit_list = [s for s in report.stages if s.index in chosen]

    def res(values: dict[str, float]) -> np.ndarray:
        sims = run_all(values, fit_list)
        return np.array([r for s, sim in zip(fit_list, sims) for r in residuals(s.measured, sim.figures)])

    result = fit(res, setup.knobs, setup.start)
    before = tuple(run_all(setup.start, report.stages))
    after = tuple(run_all(result.values, report.stages))
    return Calibration(report, setup, chosen, result, before, after)
