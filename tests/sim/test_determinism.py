"""Same scenario + same seed = the same events, byte for byte; different seeds differ."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kvtui.events import BlocksEvicted, BlocksStored
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from kvtui.run.result import result_document

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def digest(scenario, seed=None, policy=None, stepwise=False) -> tuple[str, int]:
    sim = Simulation(scenario, seed=seed, policy=policy)
    h = hashlib.sha256()
    n = 0

    def feed(ev):
        nonlocal n
        n += 1
        h.update(repr(ev).encode())

    sim.subscribe(feed)
    if stepwise:
        while sim.step() is not None:
            pass
    else:
        sim.run()
    return h.hexdigest(), n


def test_same_seed_same_event_digest():
    s = load_scenario(SCENARIOS / "pressure.yaml")
    a = digest(s)
    assert a == digest(s)
    assert a[1] > 1000


def test_stepping_and_running_give_the_same_events():
    s = load_scenario(SCENARIOS / "pressure.yaml")
    assert digest(s, stepwise=True) == digest(s)


def test_another_seed_gives_other_events():
    s = load_scenario(SCENARIOS / "pressure.yaml")
    assert digest(s, seed=1)[0] != digest(s, seed=2)[0]


def test_policies_see_the_same_sessions():
    """The workload's RNG streams are independent of the router's and of timing: every policy
    sees the same sessions start at the same times with the same first prompts (later turns
    depend on when, and whether, the earlier ones were served)."""
    s = load_scenario(SCENARIOS / "pressure.yaml")
    starts = []
    for policy in ("random", "round_robin", "cache_aware"):
        sim = Simulation(s, policy=policy)
        seen = []
        sim.subscribe(
            lambda ev, seen=seen: seen.append((ev.t, ev.session, ev.prompt_tokens, ev.output_tokens))
            if ev.kind == "arrived" and ev.turn == 1
            else None
        )
        sim.run()
        starts.append(seen)
    assert starts[0] == starts[1] == starts[2]
    assert len(starts[0]) > 50


@pytest.mark.parametrize(
    "name, sets",
    [
        ("pressure.yaml", []),
        ("offload.yaml", []),  # CPU-tier KV events
        ("pressure.yaml", ["router.index.delay_ms=3"]),  # the index hears KV events late
        ("crash-recovery.yaml", []),  # the control plane is the KV sink, and crashes
        ("mooncake.yaml", []),
    ],
)
def test_the_bus_direct_path_gives_the_same_run(name, sets):
    """Headless, KV events skip their event objects (Bus.direct); a listener without a direct
    handler turns that off. Both ways must give the same run, figure for figure."""

    def run(listen: bool) -> tuple[dict, int, bool]:
        sim = Simulation(load_scenario(SCENARIOS / name, sets))
        if listen:
            sim.subscribe(lambda ev: None, (BlocksStored, BlocksEvicted))
        sim.run()
        direct = sim.bus.direct(BlocksStored) is not None and sim.bus.direct(BlocksEvicted) is not None
        doc = result_document(sim, 0.0)
        sim.close()
        return doc, sim.bus.seq, direct

    fast, heard = run(False), run(True)
    assert fast[2] and not heard[2]  # the two runs took the two paths
    assert fast[:2] == heard[:2]
    assert fast[0]["requests"]["completed"] > 0
