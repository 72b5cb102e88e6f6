"""The app's pure parts: explanations, the runner, the block map's cell mixing, themes, record."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kvtui.events import (
    ALL_EVENT_TYPES,
    BlocksEvicted,
    Candidate,
    NodeDown,
    RequestArrived,
    RequestPreempted,
    RequestRejected,
    RouteDecided,
)
from kvtui.run.facts import SimulationFacts
from kvtui.run.narrate import History, explain, summary
from kvtui.sim.engine import Simulation
from kvtui.run import Run
from kvtui.tui.themes import DEFAULT_VARIABLES, load_theme_file, load_themes
from kvtui.tui.widgets.block_map import (
    BARS,
    CACHED,
    FREE,
    G_BAR0,
    G_CACHED,
    G_FREE,
    G_PINNED,
    G_USED,
    PINNED,
    USED,
    BlockMap,
)
from kvtui.tui.widgets.histogram import place_marks

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- explain
def _cand(node, prefix, active=0, waiting=0, free=100, eligible=True, note=""):
    feats = (("prefix", float(prefix)), ("active", float(active)), ("waiting", float(waiting)), ("free", float(free)))
    return Candidate(node=node, score=float(prefix), features=feats, eligible=eligible, note=note)


def test_route_explanation_has_the_numbers():
    h = History()
    h.on_event(RequestArrived(seq=1, t=0.0, request="req-17", session="s-3", group="chat", turn=1, prompt_tokens=1200, output_tokens=200))
    ev = RouteDecided(
        seq=2,
        t=0.0,
        request="req-17",
        node="node-a",
        policy="cache_aware",
        reason="prefix 53/75 blocks on node-a (vs node-b 0)",
        candidates=(_cand("node-a", 53, active=2, free=10), _cand("node-b", 0)),
        prompt_blocks=75,
        session="s-3",
    )
    text = explain(ev, None, h)
    assert "req-17" in text and "1,200 prompt tokens = 75 full blocks" in text
    assert "node-a holds the first 53 of them" in text and "node-b none" in text
    assert "cache_aware routes to node-a" in text
    assert "22 blocks" in text  # what is left to prefill


def test_rejection_eviction_preemption_failure_explained():
    rej = RequestRejected(seq=5, t=1.0, request="req-9", node="node-b", reason="node-b queue full (6 waiting, max_queue 6)")
    assert "queue full" in explain(rej) and "Admission control" in explain(rej)
    ev = BlocksEvicted(seq=6, t=1.0, node="node-a", keys=(1, 2, 3), groups=("sys-3", "sys-3", "chat"), for_request="req-17")
    text = explain(ev)
    assert "3 of them" in text and "2 blocks of group sys-3" in text and "1 block of group chat" in text
    pre = RequestPreempted(seq=7, t=1.0, request="req-31", node="node-b", freed_blocks=14, tokens_done=230, needed_by="req-20")
    text = explain(pre)
    assert "req-20" in text and "req-31" in text and "14 blocks" in text and "230" in text
    down = NodeDown(seq=8, t=2.0, node="node-c", lost_blocks=97, rerouted=("req-1", "req-2"), failed=())
    assert "97 blocks" in explain(down) and "req-1" in explain(down)


def test_every_event_kind_of_a_real_run_is_explained(scenario):
    sim = Simulation(scenario)
    h = History()
    sim.subscribe(h.on_event)
    seen = {}
    while True:
        ev = sim.step()
        if ev is None:
            break
        if ev.kind not in seen:
            seen[ev.kind] = ev
            text = explain(ev, SimulationFacts(sim), h)
            assert text and text != ev.kind, ev.kind
            assert summary(ev)
    assert {"routed", "evicted", "preempted", "rejected", "node_down", "node_up", "ended"} <= set(seen)
    assert explain(None).startswith("Nothing has happened yet")


def test_explain_imports_no_ui():
    code = "import sys, kvtui.run.narrate; bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; print(bad); sys.exit(1 if bad else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ---------------------------------------------------------------------- runner
def test_runner_steps_the_same_events_as_the_engine(scenario):
    sim = Simulation(scenario)
    a = []
    while len(a) < 500:
        a.append(sim.step().seq)
    r = Run(scenario)
    b = [r.step(fold=False).seq for _ in range(500)]
    assert a == b


def test_advance_respects_budget_and_reaches_target(scenario):
    r = Run(scenario)
    assert r.advance(5.0, budget_s=0.0) in (True, False)  # at least one slice, never hangs
    assert r.advance(5.0, budget_s=10.0) is True
    assert r.now >= 5.0 - 1e-9
    seq = r.position
    assert r.seek([NodeDown], budget_s=10.0).kind == "node_down"
    assert r.position > seq


def test_seek_reports_end(scenario):
    r = Run(scenario)
    r.advance(1e9, budget_s=60.0)
    assert r.ended
    assert r.seek([BlocksEvicted], budget_s=1.0) is None


def test_drain_is_capped():
    from collections import namedtuple

    from kvtui.run.run import _newer

    E = namedtuple("E", "seq")
    q = [E(i) for i in range(1, 11)]
    out, top, skipped = _newer(q, 0, 4)
    assert [e.seq for e in out] == [7, 8, 9, 10] and skipped == 6 and top == 10
    assert _newer(q, 10, 4) == ([], 10, 0)


# ---------------------------------------------------------------------- block map cells
def test_aggregate_cells_show_their_mix():
    k = 4
    state = np.array(
        [USED] * 4 + [CACHED] * 4 + [FREE] * 4 + [PINNED] * 4 + [USED, USED, CACHED, FREE] + [CACHED, FREE, FREE, FREE],
        dtype=np.int8,
    )
    owner = np.array([1] * 4 + [2] * 4 + [0] * 4 + [3] * 4 + [5, 5, 6, 0] + [4, 0, 0, 0], dtype=np.int64)
    codes = BlockMap._aggregate(state, owner, len(state), k)
    glyph, slot, tint = codes >> 5, (codes >> 1) & 15, codes & 1
    assert list(glyph[:4]) == [G_USED, G_CACHED, G_FREE, G_PINNED]
    assert list(slot[:4]) == [1, 2, 0, 3]
    assert glyph[4] == G_BAR0 + 4 - 1  # half in use -> the 4/8 bar
    assert BARS[glyph[4] - G_BAR0] == "▄"
    assert tint[4] == 1 and slot[4] == 5  # rest partly cached -> tinted; owner of the busy ones
    assert tint[0] == 0


def test_place_marks_never_overlaps():
    row = place_marks(30, [("50", 3), ("95", 4), ("99", 10)])
    assert row.count("▲") == 2 and "50,95" in row and "▲99" in row and len(row) == 30
    row = place_marks(10, [("50", 9), ("95", 9), ("99", 9)])
    assert row.endswith("▲") and len(row) == 10


# ---------------------------------------------------------------------- themes
def test_theme_files_load_with_block_variables():
    from kvtui.tui.themes import SHIPPED

    assert SHIPPED == ROOT / "kvtui/themes", "themes ship inside the package"
    assert SHIPPED.resolve() == ROOT / "themes", "... from the checkout's top-level themes/, as scenarios/"
    themes = {t.name: t for t in load_themes(SHIPPED)}
    assert {t.name for t in map(load_theme_file, (ROOT / "themes").glob("*.toml"))} == set(themes)
    assert {"dark", "light", "high-contrast"} <= set(themes)
    for t in themes.values():
        for var in DEFAULT_VARIABLES:
            assert var in t.variables, (t.name, var)
    assert themes["light"].dark is False


def test_user_theme_directory_adds_and_overrides(tmp_path, monkeypatch):
    (tmp_path / "dark.toml").write_text('name = "dark"\nprimary = "#123456"\ndark = true\n')
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#654321"\n')
    monkeypatch.setenv("KVTUI_THEMES", str(tmp_path))
    themes = {t.name: t for t in load_themes()}
    assert themes["dark"].primary == "#123456" and "mine" in themes and "light" in themes


def test_user_themes_default_to_the_config_directory(tmp_path, monkeypatch):
    mine = tmp_path / ".config/kvtui/themes"
    mine.mkdir(parents=True)
    (mine / "mine.toml").write_text('name = "mine"\nprimary = "#654321"\n')
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KVTUI_THEMES", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    names = [t.name for t in load_themes()]
    assert names[:3] == ["dark", "light", "high-contrast"] and "mine" in names


def test_bad_theme_file_is_an_input_error(tmp_path):
    from kvtui.errors import InputError

    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nprimary = 3\ncolour = "red"\n')
    with pytest.raises(InputError) as e:
        load_theme_file(bad)
    assert "primary must be a str" in str(e.value) and "unknown theme field 'colour'" in str(e.value)


# ---------------------------------------------------------------------- record
def _kvtui(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "kvtui", *args], cwd=cwd, capture_output=True, text=True)


def test_record_is_deterministic(tmp_path):
    scen = str(ROOT / "tests" / "tui" / "scenario.yaml")
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    for out in (a, b):
        p = _kvtui("record", scen, "--steps", "150", "--jump", "eviction", "--out", str(out), "--size", "90x28")
        assert p.returncode == 0, p.stderr
    assert a.read_bytes() == b.read_bytes()
    assert a.read_text().startswith("<svg")


def test_record_bad_input_exits_2_without_traceback(tmp_path):
    for args in (
        ["record", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "x.svg")],
        ["record", str(ROOT / "tests/tui/scenario.yaml"), "--out", str(tmp_path / "x.svg"), "--size", "big"],
        ["record", str(ROOT / "tests/tui/scenario.yaml"), "--out", str(tmp_path / "x.svg"), "--theme", "nope"],
    ):
        p = _kvtui(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.strip()


def test_every_event_type_has_a_summary_branch():
    # A new event type in the vocabulary should get its own sentence: this lists them.
    names = {cls.__name__ for cls in ALL_EVENT_TYPES}
    import inspect

    import kvtui.run.narrate as ex

    src = inspect.getsource(ex)
    missing = [n for n in names if n not in src]
    assert not missing, f"explain.py does not mention {missing}"


def test_latency_panel_ticks_before_its_children_are_mounted(scenario):
    """A frame or a restart can reach the panel before Textual mounts what it composed (the key
    campaign's NoMatches): ticking an unmounted panel draws nothing and raises nothing."""
    from kvtui.tui.widgets.latency_panel import LatencyPanel

    panel = LatencyPanel(Run(scenario))
    panel.tick()
    panel.rebind()
    assert [h.id for h in panel.histograms] == ["hist-ttft", "hist-tpot", "hist-e2e"]


def test_node_hit_rate_is_over_a_recent_window_and_forgotten_at_a_failure():
    """The label's h: the last HIT_WINDOW completions, not the lifetime (a node back from a
    failure read 93 % while empty)."""
    from kvtui.events import NodeCacheCleared, RequestCompleted
    from kvtui.run.journal import HIT_WINDOW, Journal

    journal = Journal()
    seq = iter(range(1, 10_000))

    def done(hit: str) -> None:
        journal.on_event(RequestCompleted(next(seq), 0.0, "r", "n", "s", "g", 10, 1, 0, hit, 0.1, 0.01, 0.2, 0))

    for _ in range(3 * HIT_WINDOW):
        done("prefix")
    for _ in range(HIT_WINDOW // 2):
        done("miss")
    assert journal.hit_rate("n") == 0.5  # a lifetime rate would read 0.857
    journal.on_event(NodeCacheCleared(next(seq), 1.0, "n", 5))
    assert journal.hit_rate("n") is None
    done("miss")
    assert journal.hit_rate("n") == 0.0
    assert journal.node_hits["n"][2] == 3 * HIT_WINDOW + HIT_WINDOW // 2 + 1


def test_chapter_line_names_the_policy_when_o_switched_it(make):
    async def go():
        app = make()
        async with app.run_test(size=(160, 50)) as pilot:
            written_for = app.runner.scenario.router.policy
            assert "story is written for" not in str(app.chapter.render())
            await pilot.press("o")
            line = str(app.chapter.render())
            assert f"now {app.runner.policy}; the story is written for {written_for}" in line

    asyncio.run(go())


def test_a_broken_user_theme_is_skipped_naming_its_file(tmp_path, monkeypatch):
    """Bad UTF-8, a bad colour and stray CSS each skip their own file only (issue 20)."""
    (tmp_path / "bytes.toml").write_bytes(b'name = "b"\nprimary = "\xff"\n')
    (tmp_path / "colour.toml").write_text('name = "c"\nprimary = "#12345z"\n')
    (tmp_path / "css.toml").write_text('name = "s"\nprimary = "#123456"\n[variables]\nblock-free = "red; } Screen { x: y"\n')
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#654321"\n')
    monkeypatch.setenv("KVTUI_THEMES", str(tmp_path))
    said: list[str] = []
    themes = {t.name for t in load_themes(skipped=said.append)}
    assert "mine" in themes and "dark" in themes and not {"b", "c", "s"} & themes
    assert len(said) == 3
    for name, why in (("bytes", "not UTF-8"), ("colour", "is not a colour"), ("css", "variables.block-free")):
        assert any(str(tmp_path / f"{name}.toml") in m and why in m for m in said), (name, said)


def test_a_node_label_names_its_pool_and_the_kv_in_flight():
    from kvtui.tui.widgets.block_map import POOL_ORDER, pool_words
    from kvtui.views import NodeView

    def view(role, moving):
        return NodeView("n", True, (), (), (), None, 0, 0, (), role=role, moving=moving)

    assert pool_words(view("both", (0, 0))) == ("", "")
    assert pool_words(view("prefill", (2, 0))) == (" prefill ⇢2", " P ⇢2")
    assert pool_words(view("decode", (0, 1))) == (" decode ⇠1", " D ⇠1")
    assert sorted(["decode", "both", "prefill"], key=POOL_ORDER.get) == ["prefill", "both", "decode"]


def test_a_jump_to_a_kv_transfer_under_a_colocated_policy_says_why_at_once():
    from types import SimpleNamespace

    from kvtui.tui.reachable import why_unreachable

    simulated = {"scenario": object()}  # a simulation's run (real engines' has none)
    assert "no KV moves" in why_unreachable(SimpleNamespace(policy="load_prefix", **simulated), "transfer")
    assert why_unreachable(SimpleNamespace(policy="llm_d_pd", **simulated), "transfer") is None
    assert "Real engines do not publish a transfer" in why_unreachable(SimpleNamespace(scenario=None), "transfer")
    assert "loses no KV events" in why_unreachable(SimpleNamespace(policy="load_prefix", **simulated), "gap")


def test_moving_the_selection_redraws_both_labels_from_the_strip_cache(make):
    """`]` no longer drops every cached row: the rows whose labels carry the mark are keyed on
    it, so the node left loses ▸ and the node chosen gains it, and nothing else is rebuilt."""
    async def go():
        app = make()
        async with app.run_test(size=(200, 60)) as pilot:
            await pilot.press("space", "space")  # some blocks in use
            maps = app.maps

            def labels() -> list[str]:
                return [maps.render_line(y).text for y in range(maps.size.height)
                        if "▸" in maps.render_line(y).text]

            first = app.selected_node
            assert any(first in line for line in labels())
            cached_cells = {k: v for k, v in maps._strips.items() if k[1] != 0}
            await pilot.press("right_square_bracket")
            second = app.selected_node
            assert second != first
            marked = labels()
            assert len(marked) == 1 and f"▸{second}" in marked[0]
            assert f"▸{first}" not in "".join(marked)
            assert all(maps._strips.get(k) is v for k, v in cached_cells.items())

    asyncio.run(go())


def test_update_in_place_lays_out_only_when_the_size_changes(make):
    from textual.widgets import Static

    from kvtui.tui.widgets.in_place import update_in_place

    async def go():
        app = make()
        async with app.run_test(size=(200, 60)) as pilot:
            await app.screen.mount(Static("one line", id="probe"))
            await pilot.pause()
            probe = app.screen.query_one("#probe", Static)
            layouts = []
            original = probe.refresh

            def spy(*regions, **kw):
                layouts.append(kw.get("layout", False))
                return original(*regions, **kw)

            probe.refresh = spy
            update_in_place(probe, "another line")
            assert not any(layouts)
            update_in_place(probe, "now\ntwo lines")
            assert any(layouts)
            await pilot.pause()
            assert probe.size.height == 2

    asyncio.run(go())


# ---------------------------------------------------------------------- issue 22: blocks in flight
def test_a_block_in_flight_draws_its_own_glyph_alone_or_in_a_mix():
    from kvtui.tui.widgets.block_map import G_MOVING, GLYPH_MOVING, GLYPHS
    from kvtui.views import MOVING

    state = np.array([MOVING] * 4 + [USED, USED, USED, MOVING] + [CACHED, FREE, FREE, FREE], dtype=np.int8)
    owner = np.array([2] * 4 + [3] * 4 + [4, 0, 0, 0], dtype=np.int64)
    codes = BlockMap._aggregate(state, owner, len(state), 4)
    glyph, slot, tint = codes >> 5, (codes >> 1) & 15, codes & 1
    assert list(glyph[:2]) == [G_MOVING, G_MOVING] and glyph[2] != G_MOVING  # any block moving marks the cell
    assert list(slot[:2]) == [2, 3] and list(tint[:2]) == [0, 0]
    assert GLYPHS[G_MOVING] == GLYPH_MOVING and GLYPH_MOVING not in (GLYPHS[:G_MOVING])


def test_the_inspector_says_where_a_moving_block_goes():
    from kvtui.tui.screens.zoom import block_text
    from kvtui.views import BlockView

    b = BlockView("decode-a", 40, "gpu", "moving", "chat", 7, None, 1, None, ("req-9",), None, None,
                  transfer="in flight: arriving from prefill-a (request req-9, 113 blocks on the link)")
    text = block_text(b)
    assert "state moving" in text and text.endswith("arriving from prefill-a (request req-9, 113 blocks on the link)")
    assert "in flight" not in block_text(BlockView("n", 1, "gpu", "used", "g", 7, None, 1, None, (), None, None))


def test_the_legend_lists_in_flight_only_when_kv_can_move(make):
    from kvtui.tui.widgets.legend import Legend

    async def go():
        app = make()
        async with app.run_test(size=(160, 50)):
            legend = app.query_one(Legend)
            assert not legend.moves_kv() and "in flight" not in str(legend.render())

    asyncio.run(go())


def test_a_repeated_toast_replaces_the_stack_instead_of_piling_up():
    """A key pressed again and again (n in the split screen) showed its toast 30 times down a
    250x70 screen; a repeat now replaces its copy, different messages still stack, and at 80x24
    the newest toast replaces them all."""
    from textual.app import App

    from kvtui.tui.toasts import FittedToasts

    class Toasting(FittedToasts, App[None]):
        pass

    async def shown(size: tuple[int, int], messages: list[str]) -> list[str]:
        app = Toasting()
        async with app.run_test(size=size) as pilot:
            for message in messages:
                app.notify(message)
            await pilot.pause()
            return [n.message for n in app._notifications]

    assert asyncio.run(shown((250, 70), ["again"] * 5)) == ["again"]
    assert asyncio.run(shown((250, 70), ["again", "other", "again"])) == ["other", "again"]
    assert asyncio.run(shown((80, 24), ["one", "two", "three"])) == ["three"]


def test_split_screen_figures_take_short_labels_when_the_long_ones_would_wrap(scenario):
    """At 250x70 the long figures line (then prefixed by the policy its border already names)
    wrapped a lone `73` onto a row of its own."""
    from kvtui.tui.compare import figures_text

    figures = Run(scenario).key_figures()
    long = figures_text(figures)
    short = figures_text(figures, width=len(long) - 1)
    assert long.startswith("token hits ") and "evicted" in long
    assert short.startswith("hits ") and "evict" in short and len(short) < len(long)
    assert figures_text(figures, width=len(long)) == long


def test_split_screen_hit_difference_is_that_of_the_shown_percentages():
    """66 % and 70 % were shown above a difference line reading "hits +3 pts" (66.4 -> 69.8)."""
    import dataclasses

    from kvtui.tui.compare import difference_text, figures_text
    from kvtui.views import KeyFigures

    base = KeyFigures(now=1.0, arrived=10, completed=9, rejected=0, preempted=0, evicted_blocks=0,
                      token_hit_rate=0.664, request_hit_rate=0.9, ttft_p50_ms=10.0, ttft_p95_ms=20.0)
    right = dataclasses.replace(base, token_hit_rate=0.698)
    assert figures_text(base).startswith("token hits 66%") and figures_text(right).startswith("token hits 70%")
    assert "token hit rate +4 pts" in difference_text("a", base, "b", right)
    assert "token hit rate +1 pt ·" in difference_text("a", base, "b", dataclasses.replace(base, token_hit_rate=0.67))


def test_the_inspector_says_why_the_null_block_is_not_evictable():
    """Block 0 read "ref count 0 ... not evictable (held) ... held by nobody"."""
    from kvtui.tui.screens.zoom import block_text
    from kvtui.views import BlockView

    null = block_text(BlockView("node-a", 0, "gpu", "null", "null block", 0, None, 0, None, (), None, None))
    assert "not evictable (vLLM's null block, never allocated)" in null and "(held)" not in null
    used = block_text(BlockView("node-a", 5, "gpu", "used", "chat", 7, None, 1, None, ("req-1",), None, None))
    assert "not evictable (held)" in used

