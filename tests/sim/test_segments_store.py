"""Decode segments with a control-plane store: the same run with segments on and off gives the
same events, crashes and recoveries included (the frames each recovery replays too). A segment
used to publish its later iterations' KV events when read or committed, so the store framed
them in other group commits (568 frames replayed at the first crash instead of 1,053); and a
reader mid-iteration after another had done that iteration's block work published its events
one iteration early (the router's index too)."""

from __future__ import annotations

from pathlib import Path

from segments_support import agree, outcome

from kvtui.events import BatchStepped, ControlPlaneRecovered
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation

CRASH = Path(__file__).resolve().parents[2] / "scenarios" / "crash-recovery.yaml"


def _run(segments: bool) -> tuple[tuple, int, list]:
    sim = Simulation(load_scenario(CRASH))
    for node in sim.nodes:
        node.segments = segments
    events: list = []
    sim.subscribe(events.append)
    try:
        sim.run()
    finally:
        sim.close()
    recovered = [e for e in events if isinstance(e, ControlPlaneRecovered)]
    return outcome(events), sum(isinstance(e, BatchStepped) for e in events), recovered


def test_decode_segments_change_nothing_a_run_with_a_store_shows():
    (off, steps_off, rec_off), (on, steps_on, _) = _run(False), _run(True)
    assert steps_on < steps_off, "no segment ran: the comparison shows nothing"
    assert len(rec_off) == 2
    assert agree(on[1], off[1])
    first = next((i for i, (a, b) in enumerate(zip(off[0], on[0])) if not agree(a, b)), None)
    assert first is None, f"event {first}: off {off[0][first]} != on {on[0][first]}"
    assert len(on[0]) == len(off[0])
