"""The counterfactual replay in the split screen: `kvtui replay DIR --as POLICY`.

Left, the recording as it happened (a LiveSource replaying its deliveries, as `kvtui replay
DIR` shows it: what real engines cannot be asked stays switched off, `capabilities` empty);
right, the same traffic simulated under POLICY (kvtui/run/counterfactual.py: one node per
engine, its pool, the recorded arrivals, prompts' block keys and output lengths). Both panes
step on one clock, the recording's (seconds from its first delivery): the simulation's time zero
is the recording's first routing decision, so a request arrives on the right when it was
routed on the left (Lockstep's `shift`). The Δ line says how the two differ so far; the line
under it, over the whole runs, is the figures `kvtui replay DIR --as POLICY --no-ui` prints
(hit rate, TTFT p50 / p95, requests per engine, available against achieved), from the same
rows (`table_rows`).

The simulated pane is its own run of the scenario (the figures' run is another, run to the
end first): both start from the same seed, so they are the same run.
"""

from __future__ import annotations

import shutil
import tempfile
from functools import partial

from kvtui.run import Run
from kvtui.run.counterfactual import Replay, simulate, table_rows, traffic_scenario
from kvtui.run.live import LiveSource
from kvtui.run.recorded_traffic import Traffic
from kvtui.scenario.model import Scenario
from kvtui.scenario.run_spec import resolve
from kvtui.tui.compare import FPS, CompareApp

HELP_PANELS = (
    ("Left", "the recording as it happened (real engines: commands switched off)."),
    ("Right", "the same traffic simulated under --as POLICY; its time zero is the recording's first routing decision."),
    ("Each side", "its key numbers, block maps, the Why of its latest event and one lower panel, its event log first (those two from 30 rows up)."),
    ("Δ line", "how the simulation differs from the recording so far: token hit rate, TTFT p50 and p95, rejections, evicted blocks."),
    ("Last line", "over the whole runs, recorded → simulated (delta): the figures `replay --as POLICY --no-ui` prints."),
)


WHOLE_ROWS = 3  # screen rows the whole runs' line may wrap to before it keeps only the deltas


def whole_text(r: Replay, width: int) -> str:
    """The headless table's rows on one wrapped line, `figure recorded → simulated (delta)`; on a
    screen where that takes more than WHOLE_ROWS rows (at 80 columns, five of 24), the deltas only."""
    rows = table_rows(r)
    full = "whole recording: " + " · ".join(f"{name} {a} → {b} ({d})" for name, a, b, d in rows)
    if len(full) <= WHOLE_ROWS * width:
        return full
    return "whole recording, Δ: " + " · ".join(f"{short_name(name)} {d}" for name, _, _, d in rows)


SHORT = {"hit rate (blocks)": "hits", "TTFT p50 ms": "TTFT p50 ms", "TTFT p95 ms": "p95",
         "available hit rate": "available", "chosen engine held": "held"}


def short_name(name: str) -> str:
    """A row's name in the deltas-only line (requests per engine: the engine's name)."""
    return SHORT.get(name, name.removeprefix("requests on "))


class CounterfactualApp(CompareApp):
    TITLE = "kvtui replay --as"

    def __init__(self, *args, directory: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.directory = directory  # the simulated run's trace: kept while it runs

    def on_unmount(self) -> None:
        super().on_unmount()
        shutil.rmtree(self.directory, ignore_errors=True)


def make_counterfactual_app(traffic: Traffic, deliveries, base: Scenario, policy: str, seed: int | None = None,
                            theme: str | None = None, fps: int = FPS) -> CounterfactualApp:
    """The recording (`deliveries`, the same recording `traffic` was read from) beside its
    traffic simulated under `policy` on `base`'s latency model."""
    directory = tempfile.mkdtemp(prefix="kvtui-replay-")
    try:
        spec = resolve(traffic_scenario(traffic, base, directory), seed, policy, "--as")  # both runs of the simulated side
        figures = simulate(traffic, spec)
        recorded = Run(source=LiveSource(deliveries), name=f"replay {traffic.path}")
        simulated = Run(spec)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    titles = (f"recorded ({traffic.policy or 'policy not recorded'})", f"simulated ({policy})")
    labels = ("recorded", f"simulated {policy}")  # the Δ line's: short, it fits one line at 120 columns
    return CounterfactualApp(recorded, simulated, labels, f"replay {traffic.path} --as {policy}", theme=theme,
                             fps=fps, shift=(0.0, traffic.start_s), titles=titles, whole=partial(whole_text, figures),
                             help_panels=HELP_PANELS, directory=directory)
