"""kvtui's event loop (kvtui/sim/loop.py) against simpy 4.1, the system it stands in for.

Every test runs the same program under both and compares what happened in which order: a
hand-made program with the tricky cases (events of both priorities at one time, interrupts,
`a | b`, process return values, `run(until)` at an event's time, stale timeouts moving the
clock), random programs (size knob KVTUI_FUZZ_SCALE: programs = 40 x scale), and shipped
scenarios whose event digests must not depend on which loop ran them.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest
import simpy

from kvtui.scenario import load_scenario
from kvtui.sim import loop
from kvtui.sim.engine import Simulation

ROOT = Path(__file__).resolve().parents[2]
SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))
INF = float("inf")


class SimpyEnvironment(simpy.Environment):
    """simpy with the two calls kvtui's loop adds, written as what they mean: step while the
    next event is at or before `limit`; a timeout with one callback."""

    def run_through(self, limit: float, most: int) -> int:
        done = 0
        while done < most and self.peek() != INF and self.peek() <= limit:
            self.step()
            done += 1
        return done

    def call_later(self, delay: float, callback) -> simpy.Timeout:
        timer = self.timeout(delay)
        timer.callbacks.append(callback)
        return timer


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
def digest(path: str, make_env, interrupt_type, drive: str, monkeypatch) -> tuple[str, int, float]:
    monkeypatch.setattr(loop, "Environment", make_env)
    monkeypatch.setattr(loop, "Interrupt", interrupt_type)
    if make_env is SimpyEnvironment:  # the engine's hot paths make their events by class
        for name in ("Event", "Timeout", "Process"):
            monkeypatch.setattr(loop, name, getattr(simpy, name))
    sim = Simulation(load_scenario(ROOT / path))
    h = hashlib.sha256()
    n = 0

    def feed(ev) -> None:
        nonlocal n
        n += 1
        h.update(repr(ev).encode())

    if drive == "run":
        sim.subscribe(feed)
        sim.run()
    elif drive == "until":  # the app's play mode: a slice of sim time per frame
        sim.subscribe(feed)
        while not sim.ended:
            sim.run_until(sim.now + 0.7)
    else:  # the app's single step: every event through the outbox
        while (ev := sim.step()) is not None:
            feed(ev)
    sim.close()
    return h.hexdigest(), n, sim.now


@pytest.mark.parametrize(
    "path,drive",
    [
        ("scenarios/pressure.yaml", "run"),  # node down (interrupts), control-plane crash
        ("scenarios/disaggregation.yaml", "run"),  # handoff timers
        ("scenarios/mooncake.yaml", "step"),  # a trace, stepped
        ("scenarios/concurrency.yaml", "run"),  # closed-loop users waiting on sessions
        ("scenarios/concurrency.yaml", "until"),
        ("scenarios/offload.yaml", "until"),
    ],
)
def test_shipped_scenarios_digest_alike_under_both_loops(path, drive, monkeypatch):
    ours = digest(path, *LOOPS["kvtui"], drive, monkeypatch)
    theirs = digest(path, *LOOPS["simpy"], drive, monkeypatch)
    assert ours == theirs
    assert ours[1] > 100
