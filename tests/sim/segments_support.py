"""The segments differential's view of a run (tests/sim/test_disaggregation.py,
tests/sim/test_segments_store.py): a support module, so that no test module imports another."""

from __future__ import annotations

import dataclasses
import math

from kvtui.events import BatchStepped, BlocksEvicted, BlocksStored


def outcome(events) -> tuple[list, dict[str, list]]:
    """A run's events as the two sides of the segments differential compare them: every event
    but BatchStepped (a segment is one), in order, and each node's KV events in order. Floats
    compare to 1e-9 (a segment's end is its start plus the sum of its iterations, single steps
    add them one by one: the last bits differ), and a KV event's time is left out: a segment
    publishes its later iterations' KV events when something reads the node or when it ends,
    not at each iteration's end (kvtui/sim/node.py)."""
    def fields(ev) -> tuple:
        out = [type(ev).__name__]
        for f in dataclasses.fields(ev):
            if f.name == "seq" or (f.name == "t" and isinstance(ev, (BlocksStored, BlocksEvicted))):
                continue
            v = getattr(ev, f.name)
            out.append(round(v, 9 - int(math.floor(math.log10(abs(v))))) if isinstance(v, float) and v else v)
        return tuple(out)

    kv: dict[str, list] = {}
    rest = []
    for ev in events:
        if isinstance(ev, (BlocksStored, BlocksEvicted)):
            kv.setdefault(ev.node, []).append(fields(ev))
        elif not isinstance(ev, BatchStepped):
            rest.append(fields(ev))
    return rest, kv


def agree(a, b) -> bool:
    """Two outcomes equal, floats within 1e-9 relative: rounding alone (`outcome`) still splits
    two values a last bit apart that straddle a rounding boundary."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(agree(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(agree(a[k], b[k]) for k in a)
    return a == b
