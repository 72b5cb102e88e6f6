"""Issue 20: the demo teaches the right lessons. Each chapter of scenarios/pressure.yaml's story
claims something; here each claim is an assertion on the run's own numbers (in that chapter's
window where the claim is about a chapter), so a calibration change that breaks a lesson fails
CI instead of misleading a classroom.

A request belongs to the chapter it arrived in; an event (eviction, preemption, rejection,
failure, recovery) to the chapter it happened in. Each run takes well under a second.

Issue 35: the last tests open the app and read its screen, so a lesson must also be visible
where the story says it is (the chapter whole, the numbers it names).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from kvtui.events import (
    BlocksEvicted,
    ControlPlaneRecovered,
    DecodeRouted,
    NodeDown,
    NodeUp,
    RequestArrived,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
    RouteDecided,
)
from kvtui.scenario import load_scenario
from kvtui.sim.engine import Simulation
from kvtui.sim.metrics import rejection_class

PRESSURE = Path(__file__).resolve().parents[1] / "scenarios" / "pressure.yaml"
WATCHED = (RequestArrived, RequestCompleted, BlocksEvicted, RequestPreempted, RequestRejected, NodeDown, NodeUp,
           ControlPlaneRecovered)


@dataclass(repr=False)  # a failing assertion prints the numbers, not every event
class Run:
    """What one policy's run of the demo did, kept with the time each thing happened."""

    arrived_at: dict[str, float] = field(default_factory=dict)
    completed: list[RequestCompleted] = field(default_factory=list)
    events: list = field(default_factory=list)  # every watched event but arrivals and completions

    def hear(self, ev) -> None:
        match ev:
            case RequestArrived():
                self.arrived_at[ev.request] = ev.t
            case RequestCompleted():
                self.completed.append(ev)
            case BlocksEvicted(medium="gpu") | RequestPreempted() | RequestRejected() | NodeDown() | NodeUp():
                self.events.append(ev)
            case ControlPlaneRecovered():
                self.events.append(ev)

    def served(self, window: tuple[float, float]) -> list[RequestCompleted]:
        """Completed requests that arrived in the window."""
        lo, hi = window
        return [c for c in self.completed if lo <= self.arrived_at[c.request] < hi]

    def happened(self, kind: type, window: tuple[float, float] = (0.0, float("inf"))) -> list:
        lo, hi = window
        return [e for e in self.events if isinstance(e, kind) and lo <= e.t < hi]

    def first(self, kind: type) -> float:
        return min((e.t for e in self.happened(kind)), default=float("inf"))


@cache
def run(policy: str) -> Run:
    sim = Simulation(load_scenario(PRESSURE, []), policy=policy)
    out = Run()
    sim.subscribe(out.hear, WATCHED)
    try:
        sim.run()
    finally:
        sim.close()
    return out


@cache
def chapters() -> dict[str, tuple[float, float]]:
    """Each chapter's title -> its [start, next chapter's start) window."""
    story = load_scenario(PRESSURE, []).story
    ends = [c.at for c in story[1:]] + [float("inf")]
    return {c.title: (c.at, end) for c, end in zip(story, ends)}


def chapter(words: str) -> tuple[float, float]:
    return next(w for title, w in chapters().items() if words in title)


def ttft_p95(done: list[RequestCompleted]) -> float:
    return float(np.percentile([c.ttft for c in done], 95))


def busiest_over_mean(done: list[RequestCompleted], nodes: int = 4) -> float:
    return max(Counter(c.node for c in done).values()) / (len(done) / nodes)


def token_hit_rate(done: list[RequestCompleted]) -> float:
    return sum(c.cached_tokens for c in done) / sum(c.prompt_tokens for c in done)


def default_policy() -> str:
    return load_scenario(PRESSURE, []).router.policy


# ----------------------------------------------------------------------------- the chapters
def test_the_demo_runs_load_prefix_and_its_story_has_its_chapters():
    """The lessons below are about these chapters under this default policy."""
    assert default_policy() == "load_prefix"
    for words in ("warm-up", "first evictions", "node-b fails", "the peak", "node-b comes back", "crash"):
        chapter(words)


def test_warm_up_caches_system_prompts_with_room_to_spare():
    """Chapter 1: later requests hit the cached system prompts; nothing is evicted yet."""
    r, window = run("load_prefix"), chapter("warm-up")
    assert [c for c in r.served(window) if c.hit != "miss"], "no request hit a cached prompt"
    for kind in (BlocksEvicted, RequestPreempted, RequestRejected):
        assert not r.happened(kind, window), kind.__name__


def test_first_evictions_chapter_starts_at_the_first_eviction():
    """Chapter 2 announces the first evictions: it starts at most a second before the first."""
    start, _ = chapter("first evictions")
    assert start <= run("load_prefix").first(BlocksEvicted) < start + 1.0


def test_memory_pressure_evicts_before_it_preempts_and_rejects_only_at_the_peak():
    """Cached-but-idle blocks are given up first; running requests only later; nobody is refused
    before the peak."""
    r = run("load_prefix")
    assert r.first(BlocksEvicted) < r.first(RequestPreempted)
    assert r.first(RequestRejected) >= chapter("the peak")[0]


def test_prefix_first_routing_piles_chat_onto_one_node():
    """Chapter 2, the seed router's lesson: cache_aware takes the best prefix with no load term,
    so the node holding chat's prompt serves over twice the mean, its requests wait for KV blocks,
    and cache_aware's TTFT p95 is many times load_prefix's (which weighs that prefix against load)."""
    window = chapter("first evictions")
    piled, weighed = run("cache_aware").served(window), run("load_prefix").served(window)
    assert busiest_over_mean(piled) > 2.0
    assert busiest_over_mean(piled) > busiest_over_mean(weighed)
    assert ttft_p95(piled) > 5 * ttft_p95(weighed)


def test_node_b_fails_and_the_router_forgets_its_cache():
    """Chapter 3: the router's index credits node-b with blocks just before the failure and with
    none just after."""
    at = chapter("node-b fails")[0]
    sim = Simulation(load_scenario(PRESSURE, []), policy="load_prefix")
    try:
        sim.run_until(at - 0.01)
        assert sim.router.index.keys_on("node-b")
        sim.run_until(at + 0.01)
        assert not sim.router.index.keys_on("node-b")
    finally:
        sim.close()


def test_node_b_fails_and_its_requests_go_elsewhere():
    """Chapter 3: whatever node-b was serving is re-routed, and what arrives is served by the
    other three."""
    r, window = run("load_prefix"), chapter("node-b fails")
    down = r.happened(NodeDown, window)
    assert [d.node for d in down] == ["node-b"]
    moved = [c for c in r.completed if c.request in set(down[0].rerouted)]
    assert r.served(window) and all(c.node != "node-b" for c in r.served(window) + moved)


def test_the_peak_rejects_at_max_queue_with_the_reason_and_preempts():
    """Chapter 4: every node's queue at max_queue (or the node down), so requests are refused
    with each node's reason; decode growth preempts."""
    r, window = run("load_prefix"), chapter("the peak")
    rejected = r.happened(RequestRejected, window)
    assert rejected and all(rejection_class(e.reason) == "no_node" and "max_queue" in e.reason for e in rejected)
    assert r.happened(RequestPreempted, window)


def test_node_b_comes_back_empty_and_its_hit_rate_climbs():
    """Chapter 5: node-b's first request misses (it came back empty); its running request hit
    rate then climbs past one half within the chapter."""
    r, window = run("load_prefix"), chapter("node-b comes back")
    assert [e.node for e in r.happened(NodeUp, window)] == ["node-b"]
    on_b = sorted((c for c in r.served(window) if c.node == "node-b"), key=lambda c: c.t)
    hits = np.cumsum([c.hit != "miss" for c in on_b]) / np.arange(1, len(on_b) + 1)
    assert len(on_b) >= 8 and hits[0] == 0.0 and hits[-1] > 0.5, hits


def test_control_plane_crash_recovers_the_same_digest_and_serving_goes_on():
    """Chapter 6: the metadata replayed from the WAL is the metadata before the crash."""
    r, window = run("load_prefix"), chapter("crash")
    recovered = r.happened(ControlPlaneRecovered, window)
    assert len(recovered) == 1 and recovered[0].digest_before == recovered[0].digest_after
    assert [c for c in r.completed if c.t > recovered[0].t]


# ----------------------------------------------------------------------------- the whole run
def test_a_load_aware_cache_router_wins_the_run():
    """Chapter 4's closing lesson, on the whole run: cache locality weighed against load beats
    either alone. load_prefix's TTFT p95 is better than cache-only (cache_aware) and load-only
    (least_loaded, round_robin) routing's, and it hits the cache more than the load-only ones.
    (Not "completes more": at seed 7 it does, but across seeds 1-8 that holds only at 7.)"""
    best = run("load_prefix")
    for other in ("cache_aware", "least_loaded", "round_robin"):
        assert ttft_p95(best.completed) < ttft_p95(run(other).completed), other
    for load_only in ("least_loaded", "round_robin"):
        assert token_hit_rate(best.completed) > token_hit_rate(run(load_only).completed), load_only


# ----------------------------------------------------------------------------- on the screen
# Issue 35: a lesson true of the run is no lesson if the screen does not show it. These open
# the app (Textual's Pilot) and read what it displays (tests/screen_support.py).
SIZES = ((80, 24), (120, 40), (250, 70))


def _app(path: Path = PRESSURE, policy: str | None = None):
    from kvtui.tui.app import make_app

    return make_app(load_scenario(path, []), policy=policy, fps=0, theme="dark")


def _shown_ms(text: str) -> float:
    """A latency as the histograms print it (kvtui/tui/widgets/histogram.py short_ms)."""
    return float(text[:-2]) if text.endswith("ms") else float(text[:-1]) * 1000


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_chapter_can_be_read_whole_at_every_size(size):
    """The line under the timeline holds the whole chapter, or says it is cut and `S` shows
    all of it; either way every word of the chapter is on the screen."""
    from screen_support import screen_text

    from textual.containers import VerticalScroll

    from kvtui.tui.screens.why import WhyScreen

    async def read_all() -> None:
        app = _app()
        async with app.run_test(size=size) as pilot:
            for i, ch in enumerate(app.runner.scenario.story):
                app.runner.goto_time(ch.at + 0.01)
                app.refresh_panels(force=True)
                await pilot.pause()
                words = " ".join(ch.text.split())
                assert f"ch {i + 1}/" in screen_text(app)
                if app.chapter.cut():
                    assert "S reads it all" in screen_text(app, app.chapter.region), (size, ch.title)
                    await pilot.press("S")
                    await pilot.pause()
                    assert isinstance(app.screen, WhyScreen)
                    body = app.screen.query_one(VerticalScroll).content_region
                    assert words in screen_text(app, body), (size, ch.title)
                    await pilot.press("escape")
                    await pilot.pause()
                else:
                    assert words in screen_text(app, app.chapter.region), (size, ch.title)

    asyncio.run(read_all())


@pytest.mark.parametrize("size", SIZES[1:], ids=lambda s: f"{s[0]}x{s[1]}")
def test_chapter_two_states_what_the_screen_shows(size):
    """Chapter 2's claims, read off the screen at its end (44.9 s): under cache_aware one node's
    `d` (requests done) is over twice the nodes' mean and TTFT p95 is in the hundreds of ms;
    under load_prefix, the story's policy, TTFT p95 is in the tens."""
    from screen_support import screen_text

    async def shown(policy: str) -> tuple[list[int], float]:
        app = _app(policy=policy)
        async with app.run_test(size=size) as pilot:
            app.runner.goto_time(chapter("first evictions")[1] - 0.1)
            app.refresh_panels(force=True)
            await pilot.pause()
            text = screen_text(app)
            assert "first evictions" in text  # still chapter 2
            done = [int(d) for d in re.findall(r"node-[a-d] u\d+% c\d+% r\d+ w\d+ d(\d+)", text)]
            p95 = re.search(r"TTFT \S+ p50 \S+ p95 (\S+)", text)
            assert len(done) == 4 and p95, text
            return done, _shown_ms(p95[1])

    story = " ".join(load_scenario(PRESSURE, []).story[1].text.split())
    assert "over twice its share" in story and "hundreds of milliseconds" in story and "in the tens" in story
    done, p95 = asyncio.run(shown("cache_aware"))
    assert max(done) > 2 * sum(done) / len(done), done
    assert 100 <= p95 < 1000, p95
    _, p95 = asyncio.run(shown("load_prefix"))
    assert 10 <= p95 < 100, p95


def test_the_disaggregation_story_tells_the_picks_in_the_order_the_events_show():
    """Chapter 1 of disaggregation.yaml: the prefill pick, then the decode pick, as the events go."""
    path = PRESSURE.parent / "disaggregation.yaml"
    sc = load_scenario(path, [])
    words = " ".join(sc.story[0].text.split())
    assert words.index("its prefill node") < words.index("its decode node")
    sim = Simulation(sc)
    order: list[tuple[str, str]] = []
    sim.subscribe(lambda ev: order.append((ev.kind, ev.request)), (RouteDecided, DecodeRouted))
    sim.run_until(20.0)
    sim.close()
    first = {}
    for kind, request in order:
        first.setdefault(request, kind)
    assert first and set(first.values()) == {"routed"}, first
