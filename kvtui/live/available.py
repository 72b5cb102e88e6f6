"""Available against achieved in route mode: the hit rate the router gave away.

Per routed request (`Served`): the most prompt blocks the router's index credited any engine
with at the decision (the engines' published KV state as it had reached kvtui: what a router
can know), what it credited the chosen engine with, and what that engine served from its cache.
Their gaps are the hit rate given away by the choice (available minus chosen) and the index's
staleness against the engine (promised and not served, served unpromised). The simulation's
figure (kvtui/sim/router/router.py `available_report`) asks the pools themselves, which only a
simulation can.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvtui.live.delivery import Served


def available_line(served: Sequence[Served]) -> str | None:
    """One line for `live` and `replay --no-ui`; None with no prompt block routed."""
    blocks = sum(s.forensics.prompt_blocks for s in served)
    if not blocks:
        return None
    best = sum(max((c[2] for c in s.candidates), default=0) for s in served)
    chosen = sum(s.forensics.promised for s in served)
    hit = sum(s.forensics.hit for s in served)
    said_more = sum(max(0, s.forensics.promised - s.forensics.hit) for s in served)
    said_less = sum(s.forensics.unpromised_hits for s in served)
    return (f"available vs achieved: the index credited the best engine with {100 * best / blocks:.1f}% of prompt blocks, "
            f"the chosen one {100 * chosen / blocks:.1f}% ({100 * (best - chosen) / blocks:.1f} pp given away), "
            f"served {100 * hit / blocks:.1f}%; index against the engines: {said_more} blocks promised and not served, "
            f"{said_less} served unpromised")
