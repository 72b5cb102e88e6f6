"""One delivery in words, for the live app's event log: what an engine's batch said.

A batch is told by what it did to the engine's blocks (`stored 4 GPU, removed 2 GPU`), not
event by event: vLLM batches many events per scheduler step, and the block counts are what the
map shows changing.
"""

from __future__ import annotations

from collections import Counter

from kvtui.live.delivery import Delivery, Gap, Received, Restarted, Scraped, Served, Watching
from kvtui.live.wire import AllBlocksCleared, BlockRemoved, BlockStored, Malformed, decode_message


def describe(delivery: Delivery) -> str:
    match delivery:
        case Received(frames=frames, replayed=replayed):
            try:
                batch = decode_message(list(frames))
            except Malformed as e:
                return f"malformed message ({e.kind}): {e}"
            return f"seq {batch.seq}{' (replay)' if replayed else ''}: " + (_changes(batch.events) or "empty batch")
        case Gap(first_missing=first, missing=n):
            return f"gap: {n} batch{'es' if n != 1 else ''} from seq {first} lost (replay could not return them)"
        case Watching():
            return "watching"
        case Restarted(last_seq=last, seq=seq):
            return f"restarted: seq went back from {last} to {seq}; a new epoch (its blocks so far are gone)"
        case Served():
            return served_line(delivery)
        case Scraped(figures=f):
            return f"metrics: {f.error}" if f.error else f"metrics: running {f.running} waiting {f.waiting} kv {f.kv_usage}"
    raise TypeError(f"not a delivery: {delivery!r}")


def served_line(s: Served) -> str:
    """A routed request: where it went, what the index promised, what hit, why the rest missed."""
    f = s.forensics
    why = ", ".join(f"{cause} {n}" for cause, n in f.causes)
    ttft = "" if s.ttft_s is None else f", ttft {s.ttft_s * 1000:.0f} ms"
    return (f"{s.request} -> {s.engine}: promised {f.promised}/{f.prompt_blocks}, hit {f.hit}, "
            f"missed {f.missed}" + (f" ({why})" if why else "") + ttft)


def _changes(events) -> str:
    stored: Counter[str] = Counter()
    removed: Counter[str] = Counter()
    cleared = 0
    for e in events:
        match e:
            case BlockStored(block_hashes=h, medium=m):
                stored[m] += len(h)
            case BlockRemoved(block_hashes=h, medium=m):
                removed[m] += len(h)
            case AllBlocksCleared():
                cleared += 1
    parts = [f"stored {n} {m}" for m, n in stored.items()] + [f"removed {n} {m}" for m, n in removed.items()]
    return ", ".join(parts + ["all blocks cleared"] * bool(cleared))


def is_removal(delivery: Delivery) -> bool:
    """A batch that removed or cleared blocks (what `n` in the live app seeks)."""
    if not isinstance(delivery, Received):
        return False
    try:
        events = decode_message(list(delivery.frames)).events
    except Malformed:
        return False
    return any(isinstance(e, (BlockRemoved, AllBlocksCleared)) for e in events)
