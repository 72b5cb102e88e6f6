"""kvtui's event loop (kvtui/sim/loop.py) against simpy 4.1, the two loops the engine runs on.

simpy runs the engine in the pure build, kvtui's loop in the compiled one (kvtui/sim/event_loop.py).
Every test runs the same program under both and compares what happened in which order: a
hand-made program with the tricky cases (events of both priorities at one time, interrupts,
`a | b`, process return values, `run(until)` at an event's time, stale timeouts moving the
clock), random programs (size knob KVTUI_FUZZ_SCALE: programs = 40 x scale), and every shipped
scenario, whose event digest must not depend on which loop ran it (chosen as the engine chooses,
by KVTUI_LOOP; in the pure build only, since the compiled engine takes kvtui's loop alone).
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest
import simpy

from kvtui.scenario import load_scenario
from kvtui.sim import compiled, loop
from kvtui.sim.engine import Simulation
from kvtui.sim.event_loop import SimpyEnvironment

ROOT = Path(__file__).resolve().parents[2]
SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))
INF = float("inf")


LOOPS = {"kvtui": (loop.Environment, loop.Interrupt), "simpy": (SimpyEnvironment, simpy.Interrupt)}


def both(program) -> tuple[list, list]:
    return [program(*LOOPS[name]) for name in ("kvtui", "simpy")]


# ---------------------------------------------------------------- hand-made
def tricky(make_env, interrupt_type) -> list:
    env = make_env()
    log: list = []
    wakes: dict = {}
    procs: dict = {}

    def note(*what) -> None:
        log.append((env.now, *what))

    def child(name, delay, result):
        yield env.timeout(delay)
        note("child", name)
        return result

    def parent():
        note("parent got", (yield env.process(child("a", 1, 42))))
        early = env.process(child("b", 0, "b"))
        yield env.timeout(0)
        yield env.timeout(0)
        note("late join", (yield early))  # processed already: resumes at once
        yield env.timeout(3) | env.timeout(3)  # its value (simpy's ConditionValue) is not modelled
        note("either of two at once")
        done = env.event()
        done.succeed("x")
        yield env.timeout(0)
        yield done | env.timeout(9)  # one side processed already: ready at once, the other goes stale
        note("after stale")

    def sleeper(name):
        while True:
            try:
                wakes[name] = env.event()
                yield env.timeout(5) | wakes[name]
                note(name, "woke")
            except interrupt_type as i:
                note(name, "interrupted", i.cause)
                if i.cause == "stop":
                    return name

    def poker():
        yield env.timeout(1)  # same time as child a's timeout, made later: after it
        wakes["s1"].succeed()
        procs["s2"].interrupt("down")
        procs["s3"] = env.process(sleeper("s3"))
        procs["s3"].interrupt("before it started")  # its start is URGENT and earlier: runs first
        timer = env.timeout(1)
        timer.callbacks.append(lambda _e: note("timer"))
        yield env.timeout(1)  # same time as the timer: after it (made later)
        procs["s1"].interrupt("stop")
        procs["s2"].interrupt("stop")
        procs["s2"].interrupt("twice")  # dead by then: ignored
        note("s1 returned", (yield procs["s1"]))
        procs["s3"].interrupt("stop")

    procs["parent"] = env.process(parent())
    procs["s1"] = env.process(sleeper("s1"))
    procs["s2"] = env.process(sleeper("s2"))
    env.process(poker())
    env.run(until=1)  # the stop is URGENT: NORMAL events at t=1 wait for the next call
    log.append(("until", env.now, env.peek()))
    env.run(until=2.5)
    log.append(("until", env.now, env.peek()))
    while env.peek() != INF:
        env.step()
        log.append(("step", env.now))
    return log


def test_tricky_orderings_match_simpy():
    ours, theirs = both(tricky)
    assert ours == theirs
    assert ("until", 1, 1) in ours  # the NORMAL events at t=1 were still queued after run(until=1)
    assert any(w[1:] == ("s2", "interrupted", "down") for w in ours)
    assert ours[-1] == ("step", 13)  # the stale timeout(9) made at t=4 still moved the clock


def test_run_through_stops_at_its_limit_and_count():
    env = loop.Environment()
    for d in (1, 2, 2, 3):
        env.timeout(d)
    assert env.run_through(2, 10) == 3 and env.now == 2
    assert env.run_through(INF, 0) == 0
    assert env.run_through(INF, 10) == 1 and env.peek() == INF
    with pytest.raises(loop.EmptySchedule):
        env.step()


# ---------------------------------------------------------------- random programs
def random_program(seed: int):
    def program(make_env, interrupt_type) -> list:
        env = make_env()
        log: list = []
        pool: list = []
        procs: list = []

        def actor(i: int, rng: random.Random, depth: int):
            for _ in range(rng.randint(1, 12)):
                try:
                    yield from act(i, rng, depth)
                except interrupt_type as e:
                    log.append((env.now, i, "interrupted", e.cause))
            return (i, env.now)

        def act(i: int, rng: random.Random, depth: int):
            what = rng.randrange(8)
            if what == 0:
                yield env.timeout(rng.choice((0, 0, 0.5, 1, rng.random())))
            elif what == 1 and pool:
                yield env.timeout(rng.choice((0, 1, 2))) | rng.choice(pool)
            elif what == 2 and pool:
                ev = rng.choice(pool)
                if not ev.triggered:
                    ev.succeed((i, env.now))
            elif what == 3:
                pool.append(env.event())
            elif what == 4 and procs:
                target = rng.choice(procs)
                if target.is_alive and target is not env.active_process:
                    target.interrupt((i, env.now))
            elif what == 5 and depth < 3:
                kid = env.process(actor(len(procs), random.Random(rng.random()), depth + 1))
                procs.append(kid)
                if rng.random() < 0.5:
                    log.append((env.now, i, "joined", (yield kid)))
            elif what == 6:
                t = env.timeout(rng.choice((0, 1)))
                t.callbacks.append(lambda _e, i=i: log.append((env.now, i, "timer")))
            log.append((env.now, i, what))

        rng = random.Random(seed)
        for i in range(rng.randint(1, 6)):
            procs.append(env.process(actor(i, random.Random(rng.random()), 0)))
        while env.peek() != INF:
            if rng.random() < 0.2:
                env.run(until=env.now + rng.choice((0.5, 1)))
            else:
                env.run_through(env.now + rng.choice((0, 1)), rng.randint(1, 5)) or env.step()
            log.append(("now", env.now))
        return log

    return program


@pytest.mark.parametrize("chunk", range(4))
def test_random_programs_match_simpy(chunk):
    for seed in range(chunk, int(40 * SCALE), 4):
        ours, theirs = both(random_program(seed))
        assert ours == theirs, f"seed {seed}"


# ---------------------------------------------------------------- shipped scenarios
SHIPPED = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "scenarios").glob("*.yaml"))
SHIPPED += sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "scenarios/seed-table").glob("*.yaml"))
EVENTS = int(20_000 * SCALE)
"""Events compared per scenario and drive: each run's beginning in CI (its faults are early), the
whole run at a large scale; `benchmarks/figures.py compare` under `KVTUI_LOOP=kvtui` and without
compares every scenario whole."""


pure_only = pytest.mark.skipif(compiled.build == "compiled", reason="the compiled engine runs kvtui's loop only")


def digest(path: str, name: str, drive: str, monkeypatch) -> tuple[str, int, float]:
    """The engine's event stream under the loop `name`, chosen as the engine chooses it."""
    monkeypatch.setenv("KVTUI_LOOP", name)
    sim = Simulation(load_scenario(ROOT / path))
    assert type(sim.env) is LOOPS[name][0]
    h = hashlib.sha256()
    n = 0

    def feed(ev) -> None:
        nonlocal n
        n += 1
        h.update(repr(ev).encode())

    if drive == "run":  # a headless run, whole
        sim.subscribe(feed)
        sim.run()
    elif drive in ("until", "slices"):  # the app's play mode (a slice of sim time per frame), or longer slices
        sim.subscribe(feed)
        while not sim.ended and n < EVENTS:
            sim.run_until(sim.now + (0.7 if drive == "until" else 5.0))
    else:  # the app's single step: every event through the outbox
        while n < EVENTS and (ev := sim.step()) is not None:
            feed(ev)
    sim.close()
    return h.hexdigest(), n, sim.now


@pure_only
@pytest.mark.parametrize("path", SHIPPED)
def test_every_shipped_scenario_digests_alike_under_both_loops(path, monkeypatch):
    ours = digest(path, "kvtui", "slices", monkeypatch)
    theirs = digest(path, "simpy", "slices", monkeypatch)
    assert ours == theirs
    assert ours[1] > 50


@pure_only
@pytest.mark.parametrize(
    "path,drive",
    [
        ("scenarios/pressure.yaml", "run"),  # node down (interrupts), control-plane crash
        ("scenarios/pressure.yaml", "step"),
        ("scenarios/disaggregation.yaml", "run"),  # handoff timers
        ("scenarios/mooncake.yaml", "step"),  # a trace, stepped
        ("scenarios/concurrency.yaml", "until"),  # closed-loop users waiting on sessions
        ("scenarios/offload.yaml", "until"),
    ],
)
def test_the_apps_drives_digest_alike_under_both_loops(path, drive, monkeypatch):
    ours = digest(path, "kvtui", drive, monkeypatch)
    theirs = digest(path, "simpy", drive, monkeypatch)
    assert ours == theirs
    assert ours[1] > 100
