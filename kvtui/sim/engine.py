"""The Simulation: owns the event loop (kvtui/sim/event_loop.py), the RNG, the nodes, the router and the event bus.

Drive it three ways, all giving the same event sequence for the same scenario and seed:
`step()` returns the next event (the app's single-step), `run_until(t)` advances sim time (the
app's play mode), `run()` goes to the end (headless reports).

Randomness: one `numpy.random.SeedSequence(seed)` is the root; it spawns one child stream for
the workload and one for the router. Keeping them apart is deliberate: `kvtui compare` runs
the same arrivals and the same prompts under every policy, and a policy that draws random
numbers (or none) cannot shift the workload's draws.
"""

from __future__ import annotations

import gc
import sys
from typing import Callable, cast

import numpy as np
from kvtui.sim import event_loop, loop

from kvtui.events import (
    BatchStepped,
    BlocksEvicted,
    Event,
    NodeDown,
    NodeUp,
    PrefixPinned,
    RequestArrived,
    SimulationEnded,
)
from kvtui.scenario.model import Scenario, ScriptedEvent
from kvtui.scenario.run_spec import RunSpec, as_spec
from kvtui.scenario.serving import request_overhead_s
from kvtui.sim.bus import Bus, Listener
from kvtui.profiles import FSYNC_S
from kvtui.sim.control_plane import ControlPlane
from kvtui.sim.replicated_control_plane import ReplicatedControlPlane
from kvtui.sim.metrics import METRICS_EVENT_TYPES, Metrics
from kvtui.sim.node import Node
from kvtui.sim.deployment import build_latency, node_links, node_offload
from kvtui.sim.handoff import Handoffs
from kvtui.sim.pools import PoolMetrics
from kvtui.sim.request import Request
from kvtui.sim.router.router import Router

PROGRESS_EVERY = 2048
"""Events between two progress callbacks: often enough for a smooth bar, rare enough to cost
nothing next to the events themselves."""


class Simulation:
    def __init__(self, run: RunSpec | Scenario, seed: int | None = None, policy: str | None = None):
        """The simulation of a resolved run (kvtui/scenario/run_spec.py); a bare scenario, with
        seed and policy, is resolved there first."""
        self.spec = spec = as_spec(run, seed, policy)
        scenario = self.scenario = spec.scenario
        self.seed = spec.seed
        self.policy_name = spec.policy
        self.env = event_loop.environment()
        self.bus = Bus(self.env)
        root = np.random.SeedSequence(self.seed)
        workload_seq, router_seq = root.spawn(2)
        self.workload_rng = np.random.default_rng(workload_seq)
        self.router_rng = np.random.default_rng(router_seq)

        self.block_size = scenario.cluster.block_size
        self.metrics = Metrics()
        self.bus.listen(
            self.metrics.on_event, METRICS_EVENT_TYPES, {BlocksEvicted: self.metrics.evicted, BatchStepped: self.metrics.stepped}
        )

        self.nodes: list[Node] = []
        self.node_by_name: dict[str, Node] = {}
        plans = spec.plans
        for plan in plans:
            node = Node(
                plan.spec,
                plan.kv_blocks,
                self.block_size,
                build_latency(scenario, plan),
                self.bus,
                self._finished,
                node_offload(plan),
            )
            self.nodes.append(node)
            self.node_by_name[node.name] = node
        self.metrics.set_nodes([n.name for n in self.nodes])

        self.router = Router(
            self.bus, self.nodes, scenario.router, self.policy_name, self.router_rng, self.block_size, self._finished,
            request_overhead_s(scenario),
        )
        self.handoffs: Handoffs | None = None
        if self.router.pairs is not None:
            links, block_bytes = node_links(scenario, plans)
            self.handoffs = Handoffs(
                self.bus, self.node_by_name, links, block_bytes,
                scenario.router.disaggregation.when_decode_full == "reject", self._finished, self.router.submit,
                self.router.pairs.route_decode,
            )
        self.pools: PoolMetrics | None = None
        if self.handoffs is not None or any(n.spec.role != "both" for n in self.nodes):
            if self.handoffs is None:  # a colocated policy: every node serves both phases, whatever its role says
                for n in self.nodes:
                    n.role = "both"
            self.pools = PoolMetrics({n.name: n.role for n in self.nodes})
            self.bus.listen(self.pools.on_event, PoolMetrics.EVENT_TYPES)
        self.ended = False
        self._end_emitted = False

        self.control_plane: ControlPlane | ReplicatedControlPlane | None = None
        meta = scenario.metadata
        rep = meta.replication if meta is not None else None
        if meta is not None and rep is not None and rep.members > 1:
            # its own child of the root, spawned after the workload's and the router's: theirs are unchanged
            raft_rng = np.random.default_rng(root.spawn(1)[0])
            fsync_s = plans[0].hardware.fsync_s if plans and plans[0].hardware is not None else FSYNC_S
            self.control_plane = ReplicatedControlPlane(self.bus, self.router, self.nodes, meta, rep, raft_rng, fsync_s)
        elif meta is not None:
            self.control_plane = ControlPlane(self.bus, self.router, self.nodes, meta)
        if self.control_plane is not None:
            for node in self.nodes:  # the store frames each iteration's KV events as single steps' (node.py)
                node.publish_every_iteration = True

        self.workload = self._build_workload()
        self.env.process(self._pin_prefixes())
        self.workload.start(self.env, self.submit)
        for ev in scenario.events:
            self.env.process(self._scripted(ev))
        self.until = scenario.until_s

    # ------------------------------------------------------------------ construction
    def _build_workload(self):
        w = self.scenario.workload
        if w.trace is not None:
            from kvtui.sim.workload.trace import TraceWorkload

            return TraceWorkload(w.trace, w.arrival, self.block_size, self.workload_rng)
        if w.shared_prefix is not None:
            from kvtui.sim.workload import SharedPrefixWorkload

            return SharedPrefixWorkload(w, self.block_size, self.workload_rng)
        from kvtui.sim.workload import SyntheticWorkload

        return SyntheticWorkload(w, self.block_size, self.workload_rng)

    def _pin_prefixes(self):
        """Preload pinned system prompts at t=0, as the run's first events (a process, so
        that everyone who subscribed after construction sees them). Its process starts before
        the workload's, so no request is routed before the pins exist."""
        for group in self.scenario.workload.groups if self.scenario.workload.trace is None else ():
            if not group.pin_on:
                continue
            keys = self.workload.system_prompt_keys(group.name)
            for name in group.pin_on:
                node = self.node_by_name[name]
                blocks = node.pin(group.name, keys)
                self.bus.emit(PrefixPinned, node=name, group=group.name, blocks=blocks)
        yield self.env.timeout(0)  # a process must be a generator

    # ------------------------------------------------------------------ listeners
    def subscribe(self, fn: Listener, types: tuple[type[Event], ...] | None = None) -> None:
        """Call `fn` with every event (or only those of `types`) as it happens."""
        self.bus.listen(fn, types)

    # ------------------------------------------------------------------ the request path
    def submit(self, req: Request) -> loop.Event:
        """Called by the workload: a request arrives at the router."""
        req.done = self.env.event()
        req.arrival = self.env.now
        self.bus.emit(
            RequestArrived,
            request=req.id,
            session=req.session,
            group=req.group,
            turn=req.turn,
            prompt_tokens=req.prompt_tokens,
            output_tokens=req.output_tokens,
        )
        self.router.submit(req)
        return req.done

    def _finished(self, req: Request, outcome: str) -> None:
        if req.done is not None and not req.done.triggered:
            req.done.succeed(outcome)

    # ------------------------------------------------------------------ faults and commands
    def _scripted(self, ev: ScriptedEvent):
        if ev.at > self.env.now:
            yield self.env.timeout(ev.at - self.env.now)
        for node in self.nodes:
            node.settle()  # a fault finds each node (and the store its KV events feed) as single steps leave it
        if ev.action == "node_down":  # the loader rejects a node_down / node_up without a node
            self.node_down(cast(str, ev.node), ev.in_flight)
        elif ev.action == "node_up":
            self.node_up(cast(str, ev.node))
        elif ev.action == "control_plane_crash":
            self.crash_control_plane()
        elif isinstance(self.control_plane, ReplicatedControlPlane):  # the loader allows metadata_* only then
            self._member_fault(self.control_plane, ev)

    def _member_fault(self, cp: ReplicatedControlPlane, ev: ScriptedEvent) -> None:
        match ev.action:
            case "metadata_leader_down":
                cp.kill_leader(ev.duration_s)
            case "metadata_member_down":
                cp.member_down(cast(str, ev.member), ev.duration_s)
            case "metadata_member_up":
                cp.member_up(cast(str, ev.member))
            case "metadata_partition":
                cp.partition(ev.members, cast(float, ev.duration_s))

    def node_down(self, name: str, in_flight: str = "reroute") -> None:
        node = self.node_by_name[name]
        if not node.up:
            return
        lost_blocks = node.pool.used_count
        requests = node.go_down()
        rerouted = tuple(r.id for r in requests) if in_flight == "reroute" else ()
        failed = tuple(r.id for r in requests) if in_flight != "reroute" else ()
        self.bus.emit(NodeDown, node=name, lost_blocks=lost_blocks, rerouted=rerouted, failed=failed)
        for r in requests:
            r.restart()
            if in_flight == "reroute":
                self.router.submit(r)
            else:
                self._finished(r, "failed")

    def node_up(self, name: str) -> None:
        node = self.node_by_name[name]
        if node.up:
            return
        node.come_up()
        self.bus.emit(NodeUp, node=name, kv_blocks=node.pool.num_blocks)
        for group, keys in node.pins:
            blocks = node.kv.pin(keys, group)
            self.bus.emit(PrefixPinned, node=name, group=group, blocks=blocks)

    def crash_control_plane(self) -> bool:
        """Crash the control plane and start its recovery (a replicated one: kill its leader, which
        restarts a few seconds later); False when there is no store (or no leader to kill)."""
        cp = self.control_plane
        if cp is None:
            return False
        if isinstance(cp, ReplicatedControlPlane):
            return cp.kill_leader() is not None
        cp.crash()
        return True

    def close(self) -> None:
        """Release the store (and its temporary directory, if it made one)."""
        if self.control_plane is not None:
            self.control_plane.close()

    # ------------------------------------------------------------------ driving
    @property
    def now(self) -> float:
        return self.env.now

    def in_flight(self) -> int:
        """Requests arrived and not yet over: being routed, held by a recovering router, on a node, or
        between a prefill node and a decode node."""
        moving = self.handoffs.in_flight if self.handoffs is not None else 0
        return self.router.in_routing + sum(n.active for n in self.nodes) + moving

    def _advance(self) -> bool:
        """Process one event of the loop; False when the run is over."""
        env = self.env
        nxt = env.peek()
        if nxt == float("inf") or (self.until is not None and nxt > self.until):
            if not self._end_emitted:
                self._end_emitted = True
                if self.until is not None and nxt != float("inf"):
                    if self.until > env.now:  # the loop (as simpy) refuses to run "until" the present
                        env.run(until=self.until)
                    reason = f"reached until_s={self.until:g}"
                else:
                    reason = "no more work"
                self.bus.emit(SimulationEnded, reason=reason)
            self.ended = True
            return False
        env.step()
        if self.control_plane is not None:
            self.control_plane.end_of_step()
        return True

    def step(self) -> Event | None:
        """Advance until the next event and return it (None once the run has ended)."""
        out = self.bus.outbox
        self.bus.keep_outbox = True
        try:
            while not out:
                if not self._advance() and not out:
                    return None
            return out.popleft()
        finally:
            self.bus.keep_outbox = False

    def run_until(self, t: float) -> None:
        """Advance sim time to `t` (events go to listeners; the step outbox is left alone)."""
        self.bus.outbox.clear()  # listeners saw those events already
        env = self.env
        inf = float("inf")
        end_at = inf if self.until is None else self.until
        while not self.ended:
            nxt = env.peek()
            if nxt > t and nxt != inf and t < end_at:
                if t > env.now:
                    env.run(until=t)
                return
            if self.control_plane is None and nxt <= min(t, end_at):  # what _advance does, in one call
                env.run_through(min(t, end_at), sys.maxsize)
                continue
            if not self._advance():
                return

    def run(self, progress: Callable[[int], None] | None = None, every: int = PROGRESS_EVERY) -> "Simulation":
        """Run to the end; `progress(events)` is called every `every` events and once at the end
        with the number of events so far: the engine reports numbers only, and whoever drew the
        bar reads how far that is (kvtui/run/progress.py) without the engine knowing of it.

        The heap is frozen (gc.freeze) before each batch of events and thawed at the end, as the
        app does while playing (kvtui/tui/app.py): a full collection walks every tracked object,
        and a big cluster's state (64 nodes' pools, index sets and queues) made those walks
        ~7 % of a 64-node run's CPU, the part of its cost that grew with the cluster. The
        engine makes almost no cyclic garbage; what it makes is collected after the thaw.

        A thawed heap lands in the collector's oldest generation without counting towards the
        rule that starts a full pass (objects that survived younger passes since the last one),
        so a process running simulations one after another never collected the ones it dropped
        (a Simulation is a cycle: the loop's processes hold its bound methods): `blog_rerun.py
        --scale full --workers 1`, 201 runs in one process, peaked at 19.7 GB. A run long enough
        to have frozen more than once therefore ends with the full pass the freezing held back,
        which frees every simulation dropped before it (the one running is still referenced)."""
        if self.control_plane is not None:  # its store flushes between two events: one at a time
            return self._run_stepwise(progress, every)
        end = float("inf") if self.until is None else self.until
        n = 0
        try:
            while True:
                gc.freeze()  # see the method's doc
                done = self.env.run_through(end, every)
                n += done
                if done < every:
                    break
                if progress is not None:
                    progress(n)
        finally:
            gc.unfreeze()
            if n >= every:
                gc.collect()
        self._advance()  # nothing left at or before the end: this ends the run
        if progress is not None:
            progress(n)
        return self

    def _run_stepwise(self, progress: Callable[[int], None] | None, every: int) -> "Simulation":
        n = 0
        while self._advance():
            n += 1
            if progress is not None and n % every == 0:
                progress(n)
        if progress is not None:
            progress(n)
        return self
