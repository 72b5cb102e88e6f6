"""Real engines in words: what a batch of KV events did, a gap, a restart, a message that did not
decode, a /metrics read, and why a routed request's blocks missed (kvtui/run/narrate.py
dispatches these events here; same rules: pure text, numbers from the event itself).

A batch is told by what it did to the engine's blocks (`stored 4 gpu, removed 2 gpu`), not
event by event: vLLM batches many events per scheduler step, and the block counts are what the
map shows changing. The causes of a miss are kvtui/live/forensics.py's, in its order.
"""

from __future__ import annotations

from kvtui.events import (
    EngineRestarted,
    EngineScraped,
    EngineWatched,
    Event,
    KVBatchReceived,
    KVEventsLost,
    KVMessageMalformed,
    MissesAttributed,
)

TYPES = (EngineWatched, KVBatchReceived, KVEventsLost, EngineRestarted, KVMessageMalformed, EngineScraped,
         MissesAttributed)

CAUSE_WHY = {
    "last token": "the prompt is a whole number of blocks and vLLM computes the last prompt token anyway "
                  "(at most all tokens but one hit), so its last block is recomputed",
    "partial block": "the prompt's last block is not full, and only full blocks are cached",
    "stale index": "the index said the engine held them and it did not: KV events reach the router late, "
                   "or the engine evicted them after publishing",
    "evicted here": "the engine had held them and evicted them",
    "held elsewhere": "another engine held them when the request was routed, and the policy sent it here",
    "new": "no engine had them",
}


def _blocks(per_medium: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{n} {medium}" for medium, n in per_medium)


def batch_changes(ev: KVBatchReceived) -> str:
    parts = ([f"stored {_blocks(ev.stored)}"] if ev.stored else []) + (
        [f"removed {_blocks(ev.removed)}"] if ev.removed else [])
    if ev.cleared:
        parts.append("all blocks cleared")
    if ev.orphans:
        parts.append(f"{ev.orphans} orphans")
    return ", ".join(parts) or "empty batch"


def scrape_line(ev: EngineScraped) -> str:
    if ev.error:
        return f"metrics: {ev.error}"
    usage = "-" if ev.kv_usage is None else f"{100 * ev.kv_usage:.0f}%"
    hits = "-" if ev.hit_rate is None else f"{100 * ev.hit_rate:.0f}%"
    return (f"metrics: kv {usage} of {ev.num_gpu_blocks or '?'} blocks, running {ev.running}, waiting {ev.waiting}, "
            f"prefix hits {hits} of tokens" + (f", {ev.skipped} bad samples skipped" if ev.skipped else ""))


def misses_line(ev: MissesAttributed) -> str:
    why = ", ".join(f"{cause} {n}" for cause, n in ev.causes)
    return (f"{ev.request} on {ev.node}: promised {ev.promised}/{ev.prompt_blocks}, hit {ev.hit}, missed {ev.missed}"
            + (f" ({why})" if why else ""))


def summary(ev: Event) -> str:
    match ev:
        case EngineWatched():
            return f"watching {ev.node}"
        case KVBatchReceived():
            return f"{ev.node} seq {ev.batch_seq}{' (replay)' if ev.replayed else ''}: {batch_changes(ev)}"
        case KVEventsLost():
            return f"GAP {ev.node}: {ev.missing} batch{'es' if ev.missing != 1 else ''} from seq {ev.first_missing} lost"
        case EngineRestarted():
            return f"RESTART {ev.node}: seq went back from {ev.last_seq} to {ev.seq_now}"
        case KVMessageMalformed():
            return f"MALFORMED {ev.node} ({ev.what}): {ev.message}"
        case EngineScraped():
            return f"{ev.node} {scrape_line(ev)}"
        case MissesAttributed():
            return f"MISSES {misses_line(ev)}"
    return ev.kind


def explain(ev: Event) -> str:
    match ev:
        case EngineWatched():
            return (f"kvtui subscribed to {ev.node}'s KV events (and asked its replay socket for what it published "
                    f"before): from here on every block it stores or removes reaches the map and the index.")
        case KVBatchReceived():
            replay = " Replay returned it: it had been published before kvtui's socket was connected." if ev.replayed else ""
            return (f"{ev.node} published batch {ev.batch_seq}: {batch_changes(ev)}. vLLM publishes one batch per "
                    f"scheduler step, a block stored when it enters the prefix cache, removed when it is evicted."
                    + replay + (f" {ev.orphans} stored blocks had a parent kvtui never saw, so they cannot be keyed "
                                f"(llm-d skips them too)." if ev.orphans else ""))
        case KVEventsLost():
            return (f"{ev.missing} batch{'es' if ev.missing != 1 else ''} of {ev.node} from seq {ev.first_missing} "
                    f"never arrived and its replay socket could not return them: whatever they stored or removed is "
                    f"missing from the map and the index until the engine publishes those blocks again.")
        case EngineRestarted():
            return (f"{ev.node}'s batch numbers went back from {ev.last_seq} to {ev.seq_now}: a new process, with an "
                    f"empty cache. Its blocks are forgotten; a new epoch begins.")
        case KVMessageMalformed():
            return f"A message from {ev.node} is no KV-event batch ({ev.what}: {ev.message}). It is counted and skipped."
        case EngineScraped():
            return f"{ev.node}'s /metrics read: {scrape_line(ev).removeprefix('metrics: ')}."
        case MissesAttributed():
            return _explain_misses(ev)
    return summary(ev)


def _explain_misses(ev: MissesAttributed) -> str:
    out = [f"{ev.request} had {ev.prompt_blocks} prompt blocks; the index promised {ev.promised} of them on {ev.node}, "
           f"which served {ev.hit} from its prefix cache."]
    if not ev.causes:
        out.append("Nothing missed.")
    for cause, n in ev.causes:
        out.append(f"{n} missed as {cause}: {CAUSE_WHY.get(cause, cause)}"
                   + (f" (batches {', '.join(map(str, ev.evicted_in[:5]))})" if cause == "evicted here" and ev.evicted_in else "")
                   + ".")
    if ev.unpromised_hits:
        out.append(f"{ev.unpromised_hits} blocks hit that the index had not promised (it was behind the engine).")
    return " ".join(out)


def life_step(ev: Event) -> str:
    match ev:
        case MissesAttributed():
            return "misses: " + (", ".join(f"{cause} {n}" for cause, n in ev.causes) or "none") + \
                f" ({ev.hit}/{ev.prompt_blocks} blocks hit, {ev.promised} promised)"
    return summary(ev)
