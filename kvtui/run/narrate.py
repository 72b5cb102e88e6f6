"""Events in words, in one place: what an event did and why, with the numbers.

Pure text, no Textual or Rich: the app's explanation panel, its logs, the life of a request
and any headless tool (a notebook, a test, `kvtui record`) use the same sentences. Each
function dispatches on the event's class with `match`, so a new event kind is described here
and nowhere else.

- `summary(event)` is one short line for a log.
- `explain(event, facts, history)` is a few sentences for the teaching panel. It reads the
  event's own fields first; `history` (a `History` subscribed to the same run) adds what earlier
  events said about the request (prompt size, turn, session), and `facts` (a `Facts`: the
  simulation's, or a live cluster's) adds static facts (block size, node capacity, CPU tiers,
  prefill cost). Nothing here changes the run.
- `life_lines(request, life)` is one request's life, event by event; `life_rows` the same as
  (head, text) rows, for the app's life screen to wrap.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Iterable

from kvtui.events import (
    BatchStepped,
    BlocksEvicted,
    BlocksStored,
    Candidate,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    DecodeRouted,
    Event,
    FirstToken,
    KVTransferDone,
    KVTransferStarted,
    KVTransferWaiting,
    NodeCacheCleared,
    NodeDown,
    NodeUp,
    PrefixPinned,
    RequestArrived,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
    RequestScheduled,
    RouteDecided,
    SimulationEnded,
)
from kvtui.run import narrate_live, narrate_pd, narrate_raft
from kvtui.run.facts import Facts, NoFacts

__all__ = ["History", "RequestInfo", "explain", "fmt_int", "fmt_ms", "fmt_score", "life_lines", "life_rows", "plural", "request_of", "summary"]


# ---------------------------------------------------------------------- number formatting
def fmt_int(n: float) -> str:
    """1200 -> '1,200'."""
    return f"{int(round(n)):,}"


def fmt_score(v: float) -> str:
    """A router's score, feature or margin, the one way every panel prints them: whole numbers
    with thousands separators, others to 3 decimals without trailing zeros (1.26729 -> '1.267');
    the engine keeps 6 decimals, more than a reader compares."""
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3f}".rstrip("0").rstrip(".")


def fmt_ms(seconds: float) -> str:
    """A duration in seconds, shown in ms below 10 s and in s above."""
    ms = seconds * 1000.0
    if ms < 10:
        return f"{ms:.2f} ms"
    if ms < 10_000:
        return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.1f} ms"
    return f"{seconds:,.1f} s"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 snapshot`, `3 snapshots`: a count with its noun in agreement (`many` when not `word`+s)."""
    return f"{fmt_int(n)} {word if n == 1 else (many or word + 's')}"


def _block_range(first: int, last: int) -> str:
    """"block 7" for one block: "blocks 7-7" read like a typo on the Why panel."""
    return f"block {first}" if first == last else f"blocks {first}-{last}"


def _needed_by(ev: RequestPreempted) -> str:
    """Whom a preemption made room for: "itself" when the request needing a block was the
    newest and gave its own up (the log read "req-169 ... for req-169")."""
    return "itself" if ev.needed_by == ev.request else ev.needed_by


def _hit_phrase(hit: str) -> str:
    """A completion's cache outcome in words: "prefix hit", "exact hit", or "a miss" (not "miss hit")."""
    return "a miss" if hit == "miss" else f"{hit} hit"


def _names(items: Iterable[str], limit: int = 4) -> str:
    items = list(items)
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


def _and_list(parts: list[str]) -> str:
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


# ---------------------------------------------------------------------- memory of the run
@dataclass(frozen=True, slots=True)
class RequestInfo:
    request: str
    session: str
    group: str
    turn: int
    prompt_tokens: int
    output_tokens: int


class History:
    """What earlier events said about each request, so later events can be explained.

    Subscribe `on_event` to the simulation. Bounded: it forgets the oldest requests beyond
    `keep` (a long run does not grow memory without end).
    """

    def __init__(self, keep: int = 50_000):
        self.keep = keep
        self.requests: OrderedDict[str, RequestInfo] = OrderedDict()
        self.scheduled: OrderedDict[str, RequestScheduled] = OrderedDict()

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, RequestArrived):
            self.requests[ev.request] = RequestInfo(
                ev.request, ev.session, ev.group, ev.turn, ev.prompt_tokens, ev.output_tokens
            )
            if len(self.requests) > self.keep:
                self.requests.popitem(last=False)
        elif isinstance(ev, RequestScheduled):
            self.scheduled[ev.request] = ev
            self.scheduled.move_to_end(ev.request)
            if len(self.scheduled) > self.keep:
                self.scheduled.popitem(last=False)

    def request(self, name: str) -> RequestInfo | None:
        return self.requests.get(name)


# ---------------------------------------------------------------------- one-line summaries
def summary(ev: Event) -> str:
    """One short line for a log (no explanation, just what happened)."""
    match ev:
        case RouteDecided():
            return f"{ev.request} -> {ev.node or 'nobody'}: {ev.reason}"
        case RequestRejected():
            return f"REJECT {ev.request}{' at ' + ev.node if ev.node else ''}: {ev.reason}"
        case BlocksEvicted():
            return _summary_evicted(ev)
        case RequestPreempted():
            return f"PREEMPT {ev.node}: {ev.request} ({plural(ev.freed_blocks, 'block')} freed) for {_needed_by(ev)}"
        case NodeDown():
            return _summary_node_down(ev)
        case NodeUp():
            return f"UP {ev.node}: back with {ev.kv_blocks} empty blocks"
        case NodeCacheCleared():
            return f"CLEARED {ev.node}: {ev.keys} cached keys dropped"
        case PrefixPinned():
            return f"PIN {ev.node}: {plural(ev.blocks, 'block')} of {ev.group}'s system prompt"
        case ControlPlaneCrashed():
            return f"CRASH control plane after {ev.records} WAL records"
        case ControlPlaneRecovered():
            same = "state matches" if ev.digest_before == ev.digest_after else "STATE DIFFERS"
            return f"RECOVERED control plane: {ev.records} records replayed, {same}"
        case SimulationEnded():
            return f"END {ev.reason}"
        case DecodeRouted() | KVTransferWaiting() | KVTransferStarted() | KVTransferDone():
            return narrate_pd.summary(ev)
        case _ if isinstance(ev, narrate_raft.TYPES):  # MetadataElection, MetadataVote, MetadataLeaderElected,
            # MetadataTermChanged, MetadataStepDown, MetadataCommitted, MetadataStaleRead, MetadataMemberDown,
            # MetadataMemberUp, MetadataPartitioned, MetadataHealed
            return narrate_raft.summary(ev)
        case _ if isinstance(ev, narrate_live.TYPES):  # EngineWatched, KVBatchReceived, KVEventsLost,
            # EngineRestarted, KVMessageMalformed, EngineScraped, MissesAttributed (real engines)
            return narrate_live.summary(ev)
        case RequestArrived():
            return (f"{ev.request} arrives ({ev.group}, turn {ev.turn}, " if ev.group else f"{ev.request} arrives (") + \
                f"{fmt_int(ev.prompt_tokens)}+{fmt_int(ev.output_tokens)} tokens)"
        case RequestScheduled():
            return _summary_scheduled(ev)
        case BlocksStored(medium="cpu"):
            return f"{ev.node} CPU tier keeps {len(ev.keys)} evicted blocks ({ev.group})"
        case BlocksStored(request=""):
            return f"{ev.node} caches {len(ev.keys)} blocks (prefix {ev.group})"
        case BlocksStored():
            return f"{ev.node} caches {len(ev.keys)} blocks of {ev.request} ({ev.group})"
        case FirstToken():
            return f"{ev.request} first token on {ev.node} after {fmt_ms(ev.ttft)}"
        case RequestCompleted():
            return f"{ev.request} done on {ev.node}: TTFT {fmt_ms(ev.ttft)}, E2E {fmt_ms(ev.e2e)} ({ev.hit})"
        case BatchStepped():
            return (
                f"{ev.node} ran {ev.iterations} iteration{'s' if ev.iterations != 1 else ''} "
                f"({ev.running} running, {ev.waiting} waiting, {ev.used_blocks} blocks used)"
            )
    return ev.kind


def _summary_evicted(ev: BlocksEvicted) -> str:
    groups = Counter(ev.groups)
    whose = ", ".join(f"{g or '?'} x{n}" for g, n in groups.most_common())
    tier = " CPU tier" if ev.medium == "cpu" else ""
    return f"EVICT {ev.node}{tier}: {plural(len(ev.keys), 'block')} ({whose})" + (f" for {ev.for_request}" if ev.for_request else "")


def _summary_node_down(ev: NodeDown) -> str:
    moved = f", {len(ev.rerouted)} re-routed" if ev.rerouted else ""
    failed = f", {len(ev.failed)} failed" if ev.failed else ""
    return f"DOWN {ev.node}: {plural(ev.lost_blocks, 'block')} in use lost{moved}{failed}"


def _summary_scheduled(ev: RequestScheduled) -> str:
    what = "resumes" if ev.resumed else "starts"
    loaded = f" + {ev.loaded_blocks} from CPU" if ev.loaded_blocks else ""
    return f"{ev.node} {what} {ev.request}: {ev.hit_blocks}/{ev.prompt_blocks} cached{loaded}, {ev.new_blocks} new blocks"


# ---------------------------------------------------------------------- explanations
def _prompt_phrase(req: str, info: RequestInfo | None, prompt_blocks: int, bs: int) -> str:
    if info is not None:
        turn = f" (turn {info.turn} of session {info.session}, group {info.group})" if info.turn > 1 else (
            f" (group {info.group})" if info.group else "")
        return f"{req}{turn} has {fmt_int(info.prompt_tokens)} prompt tokens = {plural(prompt_blocks, 'full block')} of {bs}."
    return f"{req} has {plural(prompt_blocks, 'full prompt block')} of {bs} tokens."


def _holdings(cands: tuple[Candidate, ...], total: int) -> str:
    """'node-a holds the first 53 of them, node-b 10, node-c none'."""
    parts = []
    first = True
    for c in cands:
        p = int(c.feature("prefix"))
        if p <= 0:
            held = "none"
        elif total and p >= total:
            held = "all of them" if first else "all"
        else:
            held = f"the first {fmt_int(p)} of them" if first else f"the first {fmt_int(p)}"
        parts.append(f"{c.node} {'holds ' if first else ''}{held}")
        first = False
    return _and_list(parts)


def _explain_route(ev: RouteDecided, facts: Facts, history: History | None) -> str:
    bs = facts.block_size
    info = history.request(ev.request) if history else None
    total = ev.prompt_blocks
    out = [_prompt_phrase(ev.request, info, total, bs)]
    cands = ev.candidates
    has_prefix = any(c.feature("prefix") > 0 for c in cands)
    if cands:
        if has_prefix:
            out.append(_holdings(cands, total) + ".")
        elif total:
            out.append("No node holds any of them.")
        out_of = [c for c in cands if not c.eligible]
        if out_of:
            out.append(
                "Not eligible: " + "; ".join(f"{c.node} ({c.note or 'refuses'})" for c in out_of) + "."
            )
    if ev.node is None:
        out.append(f"No node can take it, so {ev.policy} rejects it.")
        return " ".join(out)
    chosen = next((c for c in cands if c.node == ev.node), None)
    load = ""
    if chosen is not None and any(name == "run" for name, _ in chosen.features):  # a live proxy's candidates carry the prefix only
        load = (
            f" {ev.node} has {fmt_int(chosen.feature('run'))} running, {fmt_int(chosen.feature('wait'))} waiting "
            f"and {100 * chosen.feature('kv_util'):.0f}% of its KV cache in use."
        )
    reason = ev.reason
    out.append(f"So {ev.policy} routes to {ev.node}: {reason}.{load}")
    eligible = sum(1 for c in cands if c.eligible)
    if eligible > 1 and ev.tie:
        out.append(f"It tied with another node at the top score ({ev.tie}).")
    elif eligible > 1 and ev.margin != 0:
        out.append(f"Its lead over the runner-up is {fmt_score(ev.margin)} in {ev.policy}'s own score.")
    if ev.stale:
        out.append(f"The index was stale here: {ev.stale} (KV events reach the router late).")
    if chosen is not None and total:
        p = int(chosen.feature("prefix"))
        if p >= total:
            out.append("Only the tokens after the last full block need prefill.")
        elif p > 0:
            out.append(f"It must prefill {plural(total - p, 'block')} ({fmt_int((total - p) * bs)} tokens) that no cache holds there.")
        else:
            out.append("It must prefill the whole prompt.")
    return " ".join(out)


def _explain_rejected(ev: RequestRejected, history: History | None) -> str:
    info = history.request(ev.request) if history else None
    size = ""
    if info is not None:
        size = f" ({fmt_int(info.prompt_tokens)} prompt + {fmt_int(info.output_tokens)} output tokens)"
    reason = ev.reason
    if ev.node is None:
        head = f"{ev.request}{size} is rejected by the router: {reason}."
    else:
        head = f"{ev.request}{size} is rejected at {ev.node}: {reason}."
    if reason.startswith("early rejection"):
        why = ("Mooncake's conductor estimates the TTFT on the best prefill node and the time between tokens on the "
               "chosen decode node before any work starts; past an SLO it refuses the request at once rather than "
               "spend a prefill on a request that would miss it anyway.")
    elif "can hold at most" in reason:
        why = "It could never fit that node's KV cache, so admission control refuses it at once instead of letting it wait forever."
    elif "max_active" in reason or "queue full" in reason or "max_queue" in reason:
        why = "Admission control caps the load a node accepts, so a burst is refused with a reason instead of growing the queue (and everyone's TTFT) without bound."
    elif "control plane" in reason:
        why = "The router has no metadata while it replays its log, and this scenario rejects rather than waits."
    elif "down" in reason:
        why = "The node is down, and no other node could take the request."
    elif "no node" in reason:
        why = "Every node refused it for the reasons listed."
    else:
        why = "Admission control refused it."
    return f"{head} {why}"


def _explain_evicted(ev: BlocksEvicted, facts: Facts, history: History | None) -> str:
    groups = Counter(ev.groups)
    whose = _and_list([f"{plural(n, 'block')} of group {g or '?'}" for g, n in groups.most_common()])
    n = len(ev.keys)
    if not ev.for_request:  # a real engine's KV events say what left, not for whom
        return (
            f"{ev.node} evicted {plural(n, 'block')} from its {'GPU' if ev.medium == 'gpu' else 'offload tier'}'s "
            f"prefix cache ({whose}): the engine needed the room, and its least recently used free blocks go first. "
            f"A later request with that prefix recomputes them there."
        )
    if ev.medium == "cpu":
        return (
            f"{ev.node}'s CPU tier is full: to keep blocks the GPU just evicted for {ev.for_request}, it drops "
            f"its {plural(n, 'least recently used block')} ({whose}). These are now gone from the node "
            f"altogether: a request with that prefix will recompute them."
        )
    out = [
        f"{ev.node} needed blocks for {ev.for_request}. Allocation takes the least recently used free "
        f"blocks first, and {fmt_int(n)} of them still held cached data, so "
        f"{'it is' if n == 1 else 'they are'} evicted: {whose}."
    ]
    sched = history.scheduled.get(ev.for_request) if history else None
    if sched is not None and sched.seq > ev.seq and sched.node == ev.node:
        out.append(
            f"{ev.for_request} reused {sched.hit_blocks} cached blocks and needed {sched.new_blocks} new ones."
        )
    if facts.has_cpu_tier(ev.node):
        out.append(
            "Idle blocks are freed tail first, so a prefix loses its end before its head. This node has a "
            "CPU tier: the evicted blocks move there, and a later request with that prefix loads them back "
            "over the host link instead of recomputing them."
        )
    else:
        out.append(
            "Idle blocks are freed tail first, so a prefix loses its end before its head; "
            "a later request with that prefix must recompute what was evicted."
        )
    return " ".join(out)


def _explain_load(ev: RequestScheduled, facts: Facts) -> str:
    """A CPU-tier load: its time against what recomputing those tokens would have cost."""
    bs = facts.block_size
    tokens = ev.loaded_blocks * bs
    text = (
        f"{plural(ev.loaded_blocks, 'more block')} ({fmt_int(tokens)} tokens) came from {ev.node}'s CPU tier, "
        f"loaded over the host link in {fmt_ms(ev.load_s)}, added to this iteration"
    )
    alone = facts.prefill_seconds(ev.node, tokens, ev.hit_blocks * bs)
    if alone is not None:
        text += f"; prefilling them instead would take about {fmt_ms(alone)} on their own"
    return text + "."


def _explain_preempted(ev: RequestPreempted) -> str:
    if ev.needed_by == ev.request:
        who = f"{ev.request} needed another block and nothing was left to take, so it preempted itself"
    else:
        who = (
            f"{ev.needed_by} needed another block to keep going, so the scheduler preempted "
            f"{ev.request}, the most recently admitted request"
        )
    return (
        f"{ev.node} ran out of free blocks: {who}. Its {plural(ev.freed_blocks, 'block')} are freed and "
        f"its {fmt_int(ev.tokens_done)} computed tokens will be recomputed when it is scheduled again "
        f"(vLLM recompute preemption; it goes back to the front of the queue)."
    )


def _explain_scheduled(ev: RequestScheduled, facts: Facts) -> str:
    what = "resumes" if ev.resumed else "starts"
    out = [f"{ev.node} {what} {ev.request}."]
    if ev.prompt_blocks:
        if ev.hit_blocks:
            out.append(
                f"{ev.hit_blocks} of its {ev.prompt_blocks} prompt blocks were already cached in GPU memory"
                + ("." if ev.loaded_blocks else f" ({fmt_int(ev.cached_tokens)} tokens skip prefill).")
            )
        elif not ev.loaded_blocks:
            out.append(f"None of its {ev.prompt_blocks} prompt blocks was cached here.")
        if ev.loaded_blocks:
            out.append(_explain_load(ev, facts) + f" In all {fmt_int(ev.cached_tokens)} tokens skip prefill.")
    out.append(f"It takes {plural(ev.new_blocks, 'new block')}, leaving {fmt_int(ev.free_blocks)} free (empty or cached-idle).")
    if ev.resumed:
        out.append("After a preemption the work is recomputed, minus whatever prefix is still cached.")
    return " ".join(out)


def _explain_node_down(ev: NodeDown) -> str:
    out = [f"{ev.node} fails: its GPU memory is gone, with {plural(ev.lost_blocks, 'block')} in use and every cached prefix."]
    if ev.rerouted:
        out.append(f"{plural(len(ev.rerouted), 'in-flight request')} ({_names(ev.rerouted)}) {'goes back to the router and starts' if len(ev.rerouted) == 1 else 'go back to the router and start'} over elsewhere.")
    if ev.failed:
        out.append(f"{plural(len(ev.failed), 'in-flight request')} ({_names(ev.failed)}) fail.")
    if not ev.rerouted and not ev.failed:
        out.append("It had no requests in flight.")
    out.append(f"The KV index forgets {ev.node}'s blocks, so prefix routing stops sending work there.")
    return " ".join(out)


def _explain_recovered(ev: ControlPlaneRecovered) -> str:
    same = ev.digest_before == ev.digest_after
    out = [
        f"The control plane recovered by replaying {plural(ev.records, 'WAL record')} in {fmt_ms(ev.downtime)} of downtime.",
        f"State digest before the crash {ev.digest_before[:12]}, after recovery {ev.digest_after[:12]}: "
        + ("identical, nothing acknowledged was lost." if same else "DIFFERENT: recovered state does not match."),
    ]
    rep = dict(ev.report)
    facts = []
    if rep.get("snapshot_used"):
        facts.append(f"started from snapshot {rep['snapshot_used']}")
    elif "snapshot_used" in rep:
        facts.append("no snapshot yet, so the whole log was replayed")
    if rep.get("frames_replayed") is not None:
        facts.append(f"{fmt_int(rep['frames_replayed'])} group commits")
    if rep.get("bytes_replayed") is not None:
        facts.append(f"{fmt_int(rep['bytes_replayed'])} bytes read")
    if rep.get("bytes_truncated"):
        facts.append(f"{fmt_int(rep['bytes_truncated'])} bytes of torn tail cut off")
    if rep.get("damage"):
        facts.append(f"damage found: {rep['damage']}")
    if rep.get("held_events_applied"):
        facts.append(f"{fmt_int(rep['held_events_applied'])} KV events held during the outage applied afterwards")
    if facts:
        out.append("Replay: " + "; ".join(facts) + ".")
    out.append("Requests that arrived meanwhile waited (or were rejected) and are routed now.")
    return " ".join(out)


def _explain_arrived(ev: RequestArrived, facts: Facts) -> str:
    bs = facts.block_size
    turn = (
        f"turn {ev.turn} of session {ev.session}: its prompt starts with the whole earlier conversation"
        if ev.turn > 1
        else f"the first turn of session {ev.session}"
    )
    where = f"arrives from group {ev.group}, {turn}" if ev.group else "reached route mode's proxy"  # a live request has no group
    return (
        f"{ev.request} {where}. It has {fmt_int(ev.prompt_tokens)} prompt tokens "
        f"= {plural(ev.prompt_tokens // bs, 'full block')} of {bs} (only full blocks can be cached) "
        f"and asks for {fmt_int(ev.output_tokens)} output tokens."
    )


def _explain_offloaded(ev: BlocksStored) -> str:
    return (
        f"The GPU of {ev.node} evicted {plural(len(ev.keys), 'block')} of group {ev.group} (to make room for "
        f"{ev.request}); its CPU tier keeps them, least recently used dropped first when full. The router's "
        f"index now lists them on {ev.node} in the CPU tier, worth less than GPU blocks to its scorer."
    )


def _explain_stored(ev: BlocksStored) -> str:
    if not ev.request:  # a real engine's KV events name the blocks, not the request
        return (
            f"{ev.node} published {plural(len(ev.keys), 'full block')} entering its prefix cache (prefix {ev.group}); "
            f"kvtui keyed them as llm-d does, chained from their parent, so the index now lists them on {ev.node}. "
            f"A later request whose tokens start the same way can hit them there."
        )
    last = ev.first_index + len(ev.keys) - 1
    return (
        f"{ev.node} caches {plural(len(ev.keys), 'full block')} of {ev.request} (group {ev.group}, "
        f"{_block_range(ev.first_index, last)} of its sequence) under chained hash keys. A later request "
        f"whose tokens start the same way finds them and skips their prefill."
    )


def _explain_completed(ev: RequestCompleted) -> str:
    cached = (
        f"{fmt_int(ev.cached_tokens)} of its {fmt_int(ev.prompt_tokens)} prompt tokens came from cache ({ev.hit} hit)"
        if ev.cached_tokens
        else f"None of its {fmt_int(ev.prompt_tokens)} prompt tokens came from cache (miss)"
    )
    pre = f" It was preempted {plural(ev.preemptions, 'time')}." if ev.preemptions else ""
    decode = (
        f"TPOT {fmt_ms(ev.tpot)} per token over {fmt_int(ev.output_tokens)} tokens"
        if ev.output_tokens > 1
        else "a single output token (no TPOT)"
    )
    return (
        f"{ev.request} completes on {ev.node}: TTFT {fmt_ms(ev.ttft)}, {decode}, "
        f"end to end {fmt_ms(ev.e2e)}. {cached}.{pre} Its blocks stay cached "
        f"(idle) until an allocation evicts them."
    )


def _explain_batch(ev: BatchStepped, facts: Facts) -> str:
    work = []
    if ev.prefill_tokens:
        work.append(f"{fmt_int(ev.prefill_tokens)} prefill tokens")
    if ev.decode_seqs:
        work.append(f"{ev.decode_seqs} decoding sequence{'s' if ev.decode_seqs != 1 else ''}")
    what = _and_list(work) or "no work"
    its = f"{ev.iterations} iterations" if ev.iterations != 1 else "one iteration"
    cap = facts.capacity(ev.node)
    used = f"{ev.used_blocks}/{cap}" if cap else str(ev.used_blocks)
    return (
        f"{ev.node} ran {its} of its continuous batch ({what}) in {fmt_ms(ev.duration)}. "
        f"Now {ev.running} running, {ev.waiting} waiting, {used} blocks in use."
    )


def _explain_ended(ev: SimulationEnded, facts: Facts) -> str:
    m = facts.metrics()
    tail = ""
    if m is not None:
        tail = (
            f" {fmt_int(m.arrived)} requests arrived: {fmt_int(m.completed)} completed, {fmt_int(m.rejected)} rejected, "
            f"{fmt_int(m.preempted)} preemptions, {fmt_int(m.evicted_blocks)} blocks evicted; "
            f"request hit rate {m.request_hit_rate:.0%}."
        )
    return f"The run ends ({ev.reason}).{tail}"


def explain(ev: Event | None, facts: Facts | None = None, history: History | None = None) -> str:
    """Say in words what `ev` did and why, with the numbers."""
    facts = NoFacts() if facts is None else facts
    match ev:
        case None:
            return "Nothing has happened yet. Press space to play, s to step one event, e/r/p to jump to the next eviction, rejection or preemption."
        case RouteDecided():
            return _explain_route(ev, facts, history)
        case RequestRejected():
            return _explain_rejected(ev, history)
        case BlocksEvicted():
            return _explain_evicted(ev, facts, history)
        case RequestPreempted():
            return _explain_preempted(ev)
        case RequestScheduled():
            return _explain_scheduled(ev, facts)
        case NodeDown():
            return _explain_node_down(ev)
        case RequestArrived():
            return _explain_arrived(ev, facts)
        case BlocksStored(medium="cpu"):
            return _explain_offloaded(ev)
        case BlocksStored():
            return _explain_stored(ev)
        case FirstToken():
            return f"{ev.request} produces its first token on {ev.node}: TTFT {fmt_ms(ev.ttft)} (queueing + routing + uncached prefill)."
        case RequestCompleted():
            return _explain_completed(ev)
        case BatchStepped():
            return _explain_batch(ev, facts)
        case NodeUp():
            return f"{ev.node} is back with {plural(ev.kv_blocks, 'empty block')}: its cache starts cold, so the first requests routed there miss."
        case NodeCacheCleared():
            return f"{ev.node}'s cache is cleared: {plural(ev.keys, 'cached key')} dropped at once (vLLM's AllBlocksCleared KV event)."
        case PrefixPinned():
            return (
                f"{ev.node} pins group {ev.group}'s system prompt: {plural(ev.blocks, 'block')} preloaded and never evicted, "
                f"so every {ev.group} request routed there hits at least that prefix."
            )
        case ControlPlaneCrashed():
            return (
                f"The control plane crashes after {plural(ev.records, 'WAL record')} (state digest {ev.digest[:12]}). "
                f"Its in-memory state is lost; it will recover by replaying its write-ahead log."
            )
        case ControlPlaneRecovered():
            return _explain_recovered(ev)
        case SimulationEnded():
            return _explain_ended(ev, facts)
        case DecodeRouted() | KVTransferWaiting() | KVTransferStarted() | KVTransferDone():
            return narrate_pd.explain(ev)
        case _ if isinstance(ev, narrate_raft.TYPES):
            return narrate_raft.explain(ev)
        case _ if isinstance(ev, narrate_live.TYPES):
            return narrate_live.explain(ev)
    return summary(ev)


# ---------------------------------------------------------------------- one request's life
def request_of(ev: Event | None) -> str | None:
    """The request an event is about (None for node- or cluster-level events)."""
    candidates: tuple[str | None, ...]
    match ev:
        case BlocksEvicted():
            candidates = (ev.for_request,)
        case RequestPreempted():
            candidates = (ev.request, ev.needed_by)
        case None:
            return None
        case _:
            candidates = (getattr(ev, "request", None),)
    return next((r for r in candidates if isinstance(r, str) and r and not r.startswith("pin:")), None)


def life_lines(request: str, life: tuple[Event, ...]) -> list[str]:
    """The life as text lines (its tests, and anything that prints it whole)."""
    return [head + text for head, text in life_rows(request, life)]


def life_rows(request: str, life: tuple[Event, ...]) -> list[tuple[str, str]]:
    """The life as (head, text) rows: the app's life screen wraps each text under itself, so
    the times and the candidates' tree marks stay a column a reader can run down."""
    if not life:
        return [("", f"{request}: nothing known (not arrived yet, or older than the journal keeps).")]
    out = [("", f"{request}: {plural(len(life), 'event')} so far")]
    t0 = life[0].t
    for ev in life:
        out.append((f"{ev.t:.3f}s (+{ev.t - t0:.3f})  ", _life_step(ev)))
        if isinstance(ev, (RouteDecided, DecodeRouted)):
            out.extend(_candidate_rows(ev))
    return out


def _candidate_rows(ev: RouteDecided | DecodeRouted) -> list[tuple[str, str]]:
    out = []
    for c in sorted(ev.candidates, key=lambda c: -c.score):
        feats = " ".join(f"{k}={fmt_score(v)}" for k, v in c.features)
        mark = "▸" if c.node == ev.node else "─"
        note = f"  ({c.note})" if c.note else ""
        out.append((f"└─{mark} ", f"{c.node:<10} score {fmt_score(c.score):>9}  {feats}{note}"))
    return out


def _life_step(ev: Event) -> str:
    """What one event was in a request's life, with its numbers."""
    match ev:
        case RequestArrived():
            return (f"arrived at the router: {ev.prompt_tokens} prompt + {ev.output_tokens} output tokens"
                    + (f", session {ev.session}, group {ev.group}, turn {ev.turn}" if ev.group else ""))
        case RouteDecided():
            return f"routed to {ev.node or 'nowhere'} by {ev.policy}: {ev.reason} (margin {fmt_score(ev.margin)})"
        case RequestScheduled():
            again = " again (resumed)" if ev.resumed else ""
            return (f"scheduled{again} on {ev.node}: {ev.hit_blocks}/{ev.prompt_blocks} prompt blocks from cache, "
                    f"{ev.new_blocks} new, {ev.free_blocks} free")
        case BlocksStored():
            return (f"stored {plural(len(ev.keys), 'full block')} on {ev.node} (prefill/decode chunk from block "
                    f"{ev.first_index}, {ev.medium})")
        case BlocksEvicted():
            return f"evicted others' blocks for room: {plural(len(ev.keys), 'block')} on {ev.node}"
        case FirstToken():
            return f"first token on {ev.node}: TTFT {ev.ttft * 1000:.1f} ms"
        case RequestPreempted():
            return (f"preempted on {ev.node} for {_needed_by(ev)}: {plural(ev.freed_blocks, 'block')} freed, "
                    f"{ev.tokens_done} tokens to recompute")
        case RequestCompleted():
            return (f"completed on {ev.node}: {_hit_phrase(ev.hit)}, {plural(ev.cached_tokens, 'cached token')}, "
                    f"TTFT {ev.ttft * 1000:.1f} ms, E2E {ev.e2e:.2f} s")
        case RequestRejected():
            return f"rejected: {ev.reason}"
        case NodeDown():
            return f"its node failed ({ev.node})" + ("; re-routed" if ev.rerouted else "")
        case DecodeRouted() | KVTransferWaiting() | KVTransferStarted() | KVTransferDone():
            return narrate_pd.life_step(ev)
        case _ if isinstance(ev, narrate_live.TYPES):
            return narrate_live.life_step(ev)
    return ev.kind
