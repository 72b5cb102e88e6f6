"""Miss forensics, cause by cause, on made-up decisions (route mode's end-to-end test checks the
causes add up on real pools: test_live_route.py)."""

from __future__ import annotations

import pytest

from kvtui.live.forensics import attribute, summary
from kvtui.live.routing import Routed
from kvtui.live.state import LiveState
from kvtui.sim.request import Request
from kvtui.sim.router.state import Decision, NodeState

BS = 4
KEYS = (11, 12, 13, 14)


def routed(tokens: int, promised: int, elsewhere: int = 0) -> Routed:
    states = tuple(NodeState(name, None, prefix, 0.0, len(KEYS), 0, 0, 0, 8, 8, -1, -1, prefix)
                   for name, prefix in (("a", promised), ("b", elsewhere)))
    keys = KEYS[: tokens // BS]
    return Routed(Request("r", "s", "", 0, tokens, 1, keys), Decision("a", "test", ()), states)


@pytest.mark.parametrize("tokens, promised, elsewhere, evicted, cached, causes", [
    (18, 0, 0, (), 0, {"new": 4, "partial block": 1}),
    (16, 4, 0, (), 12, {"last token": 1}),
    (16, 4, 0, (), 4, {"stale index": 3}),
    (16, 1, 3, (13,), 4, {"held elsewhere": 1, "evicted here": 1, "new": 1}),
    (16, 0, 0, (), 8, {"new": 2}),
])
def test_each_missed_block_has_one_cause(tokens, promised, elsewhere, evicted, cached, causes):
    state = LiveState()
    state.evicted.update({("a", k): 7 for k in evicted})
    f = attribute(routed(tokens, promised, elsewhere), state, cached, BS)
    assert dict(f.causes) == causes
    assert sum(causes.values()) == f.missed
    assert f.evicted_in == (7,) * len(evicted)


def test_hits_the_index_did_not_promise_are_counted_and_summed():
    f = attribute(routed(16, 0), LiveState(), 8, BS)
    assert f.unpromised_hits == 2
    assert summary([f, f]) == ["routed 2 requests: prompt blocks 8, hit 4, missed 4", "  new                   4"]
