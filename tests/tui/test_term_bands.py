"""Terms as bands under the timeline: a replicated run shows a band per term with its leader
named, and a gap without a leader between a kill and the election; stepping back shortens them;
a single store has no band row at all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kvtui.events import MetadataElection, MetadataLeaderElected, MetadataMemberDown, MetadataStepDown
from kvtui.run.terms import Term, Terms, columns
from kvtui.scenario import load_scenario
from kvtui.tui.app import make_app
from kvtui.tui.widgets.term_bands import label

PATTERNS = Path(__file__).resolve().parents[2] / "scenarios" / "control-plane-patterns.yaml"


def _bands_line(app) -> str:
    widget = app.query_one("#terms")
    return widget.render().plain


def test_a_band_is_labelled_as_far_as_it_fits_and_ends_at_now():
    assert [label(Term(12, "m3", 0.0), n) for n in (7, 6, 2, 1)] == ["t12 m3", "t12 m3", "12", ""]
    bands = [Term(1, "m1", 0.0, 8.0), Term(2, "m2", 9.5)]
    # 0..20 s on 21 columns: one column a second; the open band is drawn to now (15 s), not past it
    assert [(c0, c1, b.term) for c0, c1, b in columns(bands, 15.0, 20.0, 21)] == [(0, 8, 1), (9, 15, 2)]
    assert [b.term for _c0, _c1, b in columns(bands, 5.0, 20.0, 21)] == [1]  # term 2 has not begun


def test_the_fold_opens_a_band_per_leader_and_closes_it_when_its_leader_goes():
    terms = Terms()
    terms.on_event(MetadataMemberDown(seq=1, t=8.0, member="m1", was_leader=True, term=1))
    terms.on_event(MetadataLeaderElected(seq=2, t=9.4, member="m3", term=2, votes=2, members=3, last_index=9,
                                         without_leader_s=1.4))
    terms.on_event(MetadataStepDown(seq=3, t=12.0, member="m2", term=3, reason="higher term"))  # not the leader
    terms.on_event(MetadataStepDown(seq=4, t=13.0, member="m3", term=3, reason="higher term"))
    assert terms.bands == [Term(1, "m1", 0.0, 8.0), Term(2, "m3", 9.4, 13.0)]


def test_a_replicated_run_shows_its_terms_and_stepping_back_shortens_them():
    async def go():
        app = make_app(load_scenario(str(PATTERNS), []), fps=0, theme="dark")
        async with app.run_test(size=(120, 40)) as pilot:
            assert app.query_one("#terms").display
            await pilot.press("j")  # the leader is killed at 8 s; the election follows
            await pilot.pause()
            ev = app.runner.current
            assert isinstance(ev, MetadataElection) and ev.term == 2
            app.goto("16")  # on past the new leader's win
            await pilot.pause()
            line = _bands_line(app)
            first, rest = line.split("t1 m1", 1)
            assert first == "" and "·" in rest  # term 1 from the start, then time without a leader
            assert f"t2 {ev.member}" in rest.split("·")[-1]
            assert len(line) == app.timeline.now_column(app.timeline.size.width, app.timeline.span())  # drawn to now
            await pilot.press("J")  # back to the election: term 2 has no leader yet
            await pilot.pause()
            assert "t2" not in _bands_line(app) and "t1 m1" in _bands_line(app)
    asyncio.run(go())


def test_on_a_short_screen_the_terms_are_the_timeline_background():
    """80x24: the Raft panel needs its every row (tests/tui/test_control_plane_panel.py), so the
    bands give up their row and colour the timeline's bar instead, one colour per term's parity."""
    async def go():
        app = make_app(load_scenario(str(PATTERNS), []), fps=0, theme="dark")
        async with app.run_test(size=(80, 24)) as pilot:
            app.goto("16")
            await pilot.pause()
            assert not app.query_one("#terms").display and app.timeline.terms_inline
            styles = app.timeline.term_styles(app.timeline.size.width, app.timeline.span())
            assert len({s.bgcolor for s in styles.values()}) == 2  # terms 1 and 2
            assert 0 in styles and max(styles) < app.timeline.now_column(app.timeline.size.width, app.timeline.span())
    asyncio.run(go())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_a_single_store_has_no_term_bands(make, size):
    async def go():
        app = make()
        async with app.run_test(size=size) as pilot:
            await pilot.press(*"s" * 5)
            await pilot.pause()
            assert not app.query_one("#terms").display and not app.timeline.terms_inline
            assert app.timeline.term_styles(app.timeline.size.width, app.timeline.span()) == {}
    asyncio.run(go())
