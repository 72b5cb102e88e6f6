"""The one vocabulary of the program: everything that happens is one of these events.

Each event is a slotted dataclass with `seq` (its position in the run, from 1) and `t` (sim
seconds). Events are values: nobody changes one after it is emitted. They are not declared
`frozen` because a frozen dataclass's `__init__` sets every field through `object.__setattr__`,
which made building an event ~4x slower, and the engine builds ~20-40 of them per request;
`unsafe_hash=True` keeps the equality and hashing a frozen one had. The engine emits them; the KV index, the metrics, the metadata store, the Textual
app and the headless reports all consume the same stream, so nothing is computed twice.

The KV events (`BlocksStored`, `BlocksEvicted`, `NodeCacheCleared`) mirror vLLM's KV event
stream (vllm/distributed/kv_events.py at vllm-project/vllm@0181ea3: BlockStored with block_hashes + parent_block_hash,
BlockRemoved, AllBlocksCleared), which is what llm-d's KV-cache indexer and Dynamo's KV router
subscribe to in order to know which node holds which blocks.

`kind` is a short stable name used in JSON output and in the app's filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(slots=True, unsafe_hash=True)
class Event:
    seq: int
    t: float
    kind: ClassVar[str] = "event"


@dataclass(slots=True, unsafe_hash=True)
class RequestArrived(Event):
    request: str
    session: str
    group: str
    turn: int
    prompt_tokens: int
    output_tokens: int
    kind: ClassVar[str] = "arrived"


@dataclass(slots=True, unsafe_hash=True)
class Candidate:
    """One node as the router saw it: its features and the score it got (higher wins)."""

    node: str
    score: float
    features: tuple[tuple[str, float], ...]
    eligible: bool = True
    note: str = ""

    def feature(self, name: str, default: float = 0.0) -> float:
        for key, value in self.features:
            if key == name:
                return value
        return default


@dataclass(slots=True, unsafe_hash=True)
class RouteDecided(Event):
    request: str
    node: str | None
    policy: str
    reason: str
    candidates: tuple[Candidate, ...]
    prompt_blocks: int
    session: str
    margin: float = 0.0  # the pick's lead over the runner-up in the policy's own score
    stale: str = ""  # when the index misled this decision: what it said against the pool
    tie: str = ""  # only when the pick shared the top score: how many, and how it was broken
    kind: ClassVar[str] = "routed"


@dataclass(slots=True, unsafe_hash=True)
class RequestRejected(Event):
    request: str
    node: str | None
    reason: str
    kind: ClassVar[str] = "rejected"


@dataclass(slots=True, unsafe_hash=True)
class RequestScheduled(Event):
    """The node's scheduler took the request into the running batch (again, after a preemption).

    `hit_blocks` are the leading prompt blocks found in the node's GPU prefix cache;
    `loaded_blocks` more after them came from the node's CPU tier, taking `load_s` seconds over
    the host link; `new_blocks` were allocated now (the loaded ones among them).
    """

    request: str
    node: str
    prompt_blocks: int
    hit_blocks: int
    cached_tokens: int
    new_blocks: int
    free_blocks: int
    resumed: bool
    loaded_blocks: int = 0
    load_s: float = 0.0
    kind: ClassVar[str] = "scheduled"


@dataclass(slots=True, unsafe_hash=True)
class BlocksStored(Event):
    """Full blocks of a request became cached under their chained hash keys.

    In the CPU tier (`medium="cpu"`) the blocks arrive when the GPU evicts them: `request` is then
    the request whose allocation evicted them, and `first_index` is -1 (no position: they may
    come from several prefixes), `parent_key` None.
    """

    node: str
    request: str
    group: str
    keys: tuple[int, ...]
    parent_key: int | None
    first_index: int
    medium: str = "gpu"  # the tier now holding them: "gpu", or "cpu" for the offload tier
    kind: ClassVar[str] = "stored"


@dataclass(slots=True, unsafe_hash=True)
class BlocksEvicted(Event):
    """Cached-but-idle blocks were reused for new data: their keys left the node's cache.

    `groups` names, per key, whose prefix it was; `for_request` is who needed the room.
    """

    node: str
    keys: tuple[int, ...]
    groups: tuple[str, ...]
    for_request: str
    medium: str = "gpu"  # the tier they left
    kind: ClassVar[str] = "evicted"


@dataclass(slots=True, unsafe_hash=True)
class RequestPreempted(Event):
    """A running request lost its blocks so others could grow (vLLM recompute preemption)."""

    request: str
    node: str
    freed_blocks: int
    tokens_done: int
    needed_by: str
    kind: ClassVar[str] = "preempted"


@dataclass(slots=True, unsafe_hash=True)
class FirstToken(Event):
    request: str
    node: str
    ttft: float
    kind: ClassVar[str] = "first_token"


@dataclass(slots=True, unsafe_hash=True)
class RequestCompleted(Event):
    request: str
    node: str
    session: str
    group: str
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int  # prompt tokens not prefilled: GPU hits plus `loaded_tokens`
    hit: str
    ttft: float
    tpot: float
    e2e: float
    preemptions: int
    # The request's SLOs in seconds (None: none set), so the metrics judge attainment and
    # goodput from the event alone. `tpot` is 0.0 for a 1-token output; TPOT statistics skip it.
    slo_ttft: float | None = None
    slo_tpot: float | None = None
    loaded_tokens: int = 0  # of `cached_tokens`, those loaded from the node's CPU tier
    kind: ClassVar[str] = "completed"


@dataclass(slots=True, unsafe_hash=True)
class BatchStepped(Event):
    """A node ran `iterations` scheduler iterations with an unchanged batch."""

    node: str
    iterations: int
    prefill_tokens: int
    decode_seqs: int
    duration: float
    running: int
    waiting: int
    used_blocks: int
    kind: ClassVar[str] = "batch"


@dataclass(slots=True, unsafe_hash=True)
class NodeDown(Event):
    node: str
    lost_blocks: int
    rerouted: tuple[str, ...]
    failed: tuple[str, ...]
    kind: ClassVar[str] = "node_down"


@dataclass(slots=True, unsafe_hash=True)
class NodeUp(Event):
    node: str
    kv_blocks: int
    kind: ClassVar[str] = "node_up"


@dataclass(slots=True, unsafe_hash=True)
class NodeCacheCleared(Event):
    node: str
    keys: int
    kind: ClassVar[str] = "cache_cleared"


@dataclass(slots=True, unsafe_hash=True)
class PrefixPinned(Event):
    node: str
    group: str
    blocks: int
    kind: ClassVar[str] = "pinned"


@dataclass(slots=True, unsafe_hash=True)
class ControlPlaneCrashed(Event):
    records: int
    digest: str
    kind: ClassVar[str] = "cp_crash"


@dataclass(slots=True, unsafe_hash=True)
class ControlPlaneRecovered(Event):
    """The control plane replayed its log; `report` holds the recovery report's fields."""

    records: int
    digest_before: str
    digest_after: str
    downtime: float
    report: tuple[tuple[str, object], ...]
    kind: ClassVar[str] = "cp_recovered"


@dataclass(slots=True, unsafe_hash=True)
class DecodeRouted(Event):
    """A prefill/decode router's second pick, emitted right after the `RouteDecided` of the same
    request (whose `node` is where the prompt is prefilled, its candidates the prefill pool).

    `node` is the decode node (None: refused); `prefill_node` the first pick, equal to `node` when
    the request prefills where it decodes (conditional disaggregation, or a `both` node picked
    twice); `remote` says whether its KV will move. `candidates` are the decode pool's.
    """

    request: str
    node: str | None
    prefill_node: str | None
    remote: bool
    policy: str
    reason: str
    candidates: tuple[Candidate, ...]
    margin: float = 0.0
    tie: str = ""
    kind: ClassVar[str] = "decode_routed"


@dataclass(slots=True, unsafe_hash=True)
class KVTransferWaiting(Event):
    """A prefilled request's decode node has no room for it now: it waits, its `blocks` still
    held on the prefill node (vLLM's NixlConnector keeps them until the decode side reads them)."""

    request: str
    prefill_node: str
    decode_node: str
    blocks: int
    reason: str
    kind: ClassVar[str] = "transfer_wait"


@dataclass(slots=True, unsafe_hash=True)
class KVTransferStarted(Event):
    """The decode node allocated the request's blocks (`hit_blocks` of them it already held) and
    `blocks` more are written over the link from the prefill node: `bytes` in all, after
    `queued_s` behind earlier transfers on that link, taking `seconds` once started.
    Blocks are pinned on both sides until `KVTransferDone`."""

    request: str
    prefill_node: str
    decode_node: str
    blocks: int
    hit_blocks: int
    bytes: int
    link: str
    queued_s: float
    seconds: float
    kind: ClassVar[str] = "transfer"


@dataclass(slots=True, unsafe_hash=True)
class KVTransferDone(Event):
    """The KV arrived: the prefill node frees its copy (it stays cached there), the decode node
    registers the blocks (a `BlocksStored`) and runs the request. `waited_s` counts from the end
    of the prefill: room, link queue and the copy itself."""

    request: str
    prefill_node: str
    decode_node: str
    blocks: int
    bytes: int
    waited_s: float
    kind: ClassVar[str] = "transferred"


@dataclass(slots=True, unsafe_hash=True)
class SimulationEnded(Event):
    reason: str
    kind: ClassVar[str] = "ended"


# ---------------------------------------------------------------------- a replicated control plane
# The metadata store as a Raft group (metadata.replication, kvtui/sim/raft/): members m1, m2, ...


@dataclass(slots=True, unsafe_hash=True)
class MetadataElection(Event):
    """`member`'s election timeout ran out (`timeout_s`, drawn from [lo_s, hi_s]): it asks for
    votes for `term` (with PreVote, `pre_vote`: asks whether it could win, its own term unchanged)."""

    member: str
    term: int
    pre_vote: bool
    timeout_s: float
    lo_s: float
    hi_s: float
    last_term: int
    last_index: int
    kind: ClassVar[str] = "election"


@dataclass(slots=True, unsafe_hash=True)
class MetadataVote(Event):
    """`voter` answers `candidate`'s (pre-)vote request for `term`; `reason` says why, with both logs' tails."""

    voter: str
    candidate: str
    term: int
    granted: bool
    pre_vote: bool
    reason: str
    kind: ClassVar[str] = "vote"


@dataclass(slots=True, unsafe_hash=True)
class MetadataLeaderElected(Event):
    """`member` won `term` with `votes` of `members` votes; the group had no leader for `without_leader_s`."""

    member: str
    term: int
    votes: int
    members: int
    last_index: int
    without_leader_s: float
    kind: ClassVar[str] = "leader"


@dataclass(slots=True, unsafe_hash=True)
class MetadataTermChanged(Event):
    """`member`'s term moved from `old_term` to `new_term`: it campaigned, or saw a higher term (`reason`)."""

    member: str
    old_term: int
    new_term: int
    reason: str
    kind: ClassVar[str] = "term"


@dataclass(slots=True, unsafe_hash=True)
class MetadataStepDown(Event):
    """The leader `member` of `term` is a follower again: `reason` (a higher term, or no majority heard)."""

    member: str
    term: int
    reason: str
    kind: ClassVar[str] = "step_down"


@dataclass(slots=True, unsafe_hash=True)
class MetadataCommitted(Event):
    """The leader committed up to `index` (`entries` new): a majority appended and fsynced them;
    the oldest waited `latency_ms` since it was proposed."""

    member: str
    term: int
    index: int
    entries: int
    latency_ms: float
    kind: ClassVar[str] = "commit"


@dataclass(slots=True, unsafe_hash=True)
class MetadataStaleRead(Event):
    """The router read `member` (serializable) `behind` entries behind the commit index, and routed
    `session` to `node` on it; `stale_blocks` is what that read said beyond what `node` holds."""

    member: str
    session: str
    node: str
    behind: int
    stale_blocks: int
    stale: str
    kind: ClassVar[str] = "stale_read"


@dataclass(slots=True, unsafe_hash=True)
class MetadataMemberDown(Event):
    member: str
    was_leader: bool
    term: int
    kind: ClassVar[str] = "member_down"


@dataclass(slots=True, unsafe_hash=True)
class MetadataMemberUp(Event):
    """`member` restarted: its term, vote and fsynced log survived; its store recovered from its WAL."""

    member: str
    term: int
    last_index: int
    applied: int
    kind: ClassVar[str] = "member_up"


@dataclass(slots=True, unsafe_hash=True)
class MetadataPartitioned(Event):
    """`members` are cut from `others` (peer links only: clients still reach every member)."""

    members: tuple[str, ...]
    others: tuple[str, ...]
    duration_s: float
    kind: ClassVar[str] = "partition"


@dataclass(slots=True, unsafe_hash=True)
class MetadataHealed(Event):
    members: tuple[str, ...]
    kind: ClassVar[str] = "healed"


# ---------------------------------------------------------------------- real engines (live and recorded runs)
# What kvtui/live/translate.py makes of what it receives from real engines: their KV events map
# onto BlocksStored / BlocksEvicted / NodeCacheCleared above (`node` is the engine), a request
# route mode served onto RequestArrived / RouteDecided / FirstToken / RequestCompleted; what has
# no simulated counterpart is one of these.


@dataclass(slots=True, unsafe_hash=True)
class EngineWatched(Event):
    """kvtui began watching `node` (its KV-event socket; once per engine at the start)."""

    node: str
    kind: ClassVar[str] = "watched"


@dataclass(slots=True, unsafe_hash=True)
class KVBatchReceived(Event):
    """One batch of `node`'s KV events arrived (its block events follow it): its sequence number,
    whether replay filled it, blocks stored and removed per medium, and blocks whose parent was
    unknown (`orphans`: not indexed, llm-d skips them too)."""

    node: str
    batch_seq: int
    replayed: bool
    stored: tuple[tuple[str, int], ...]
    removed: tuple[tuple[str, int], ...]
    cleared: bool
    orphans: int
    kind: ClassVar[str] = "kv_batch"


@dataclass(slots=True, unsafe_hash=True)
class KVEventsLost(Event):
    """A gap: `missing` batches of `node` from `first_missing` on that replay could not return."""

    node: str
    first_missing: int
    missing: int
    kind: ClassVar[str] = "gap"


@dataclass(slots=True, unsafe_hash=True)
class EngineRestarted(Event):
    """`node`'s batch numbers went back (`last_seq` to `seq`): a new process, its blocks gone."""

    node: str
    last_seq: int
    seq_now: int
    kind: ClassVar[str] = "restarted"


@dataclass(slots=True, unsafe_hash=True)
class KVMessageMalformed(Event):
    """A message from `node` that is no KV-event batch (`what`: which part is wrong)."""

    node: str
    what: str
    message: str
    kind: ClassVar[str] = "malformed"


@dataclass(slots=True, unsafe_hash=True)
class EngineScraped(Event):
    """One read of `node`'s `/metrics` (None where it did not say; `error`: the read failed)."""

    node: str
    num_gpu_blocks: int | None
    kv_usage: float | None
    running: int | None
    waiting: int | None
    hit_rate: float | None
    error: str | None
    skipped: int
    kind: ClassVar[str] = "scraped"


@dataclass(slots=True, unsafe_hash=True)
class MissesAttributed(Event):
    """Why the prompt blocks a routed request did not hit on `node` missed, one cause each
    (kvtui/live/forensics.py: last token, partial block, stale index, evicted here, held
    elsewhere, new); `evicted_in`: the batches that evicted the `evicted here` ones."""

    request: str
    node: str
    prompt_blocks: int
    promised: int
    hit: int
    causes: tuple[tuple[str, int], ...]
    unpromised_hits: int
    evicted_in: tuple[int, ...]
    kind: ClassVar[str] = "misses"

    @property
    def missed(self) -> int:
        return self.prompt_blocks - self.hit


ALL_EVENT_TYPES: tuple[type[Event], ...] = (
    RequestArrived,
    RouteDecided,
    RequestRejected,
    RequestScheduled,
    BlocksStored,
    BlocksEvicted,
    RequestPreempted,
    FirstToken,
    RequestCompleted,
    BatchStepped,
    NodeDown,
    NodeUp,
    NodeCacheCleared,
    PrefixPinned,
    ControlPlaneCrashed,
    ControlPlaneRecovered,
    DecodeRouted,
    KVTransferWaiting,
    KVTransferStarted,
    KVTransferDone,
    MetadataElection,
    MetadataVote,
    MetadataLeaderElected,
    MetadataTermChanged,
    MetadataStepDown,
    MetadataCommitted,
    MetadataStaleRead,
    MetadataMemberDown,
    MetadataMemberUp,
    MetadataPartitioned,
    MetadataHealed,
    SimulationEnded,
    EngineWatched,
    KVBatchReceived,
    KVEventsLost,
    EngineRestarted,
    KVMessageMalformed,
    EngineScraped,
    MissesAttributed,
)
