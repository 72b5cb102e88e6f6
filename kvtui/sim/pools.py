"""Figures of a disaggregated run: each pool's utilisation and work, the KV transfers and their
queueing, and how requests were split (the result document's `disaggregation` section).

A pool is the nodes of one `role` (prefill, decode, both). Utilisation is the share of the
pool's node-seconds spent running iterations (the sum of `BatchStepped.duration` over its
nodes, divided by nodes x simulated time), the figure DistServe and Splitwise plot per phase.
Subscribed only when a node has a role or the policy is a prefill/decode one, so a colocated
run pays nothing for it.
"""

from __future__ import annotations

from kvtui.events import BatchStepped, DecodeRouted, Event, KVTransferDone, KVTransferStarted, KVTransferWaiting
from kvtui.sim.metrics import summarize


class PoolMetrics:
    EVENT_TYPES = (BatchStepped, DecodeRouted, KVTransferWaiting, KVTransferStarted, KVTransferDone)

    def __init__(self, roles: dict[str, str]):
        self.roles = roles  # node -> role
        self.busy_s = dict.fromkeys(roles, 0.0)
        self.prefill_tokens = dict.fromkeys(roles, 0)
        self.decode_tokens = dict.fromkeys(roles, 0)
        self.split = {"remote": 0, "local": 0, "waited_for_room": 0}
        self.transfer = {"count": 0, "blocks": 0, "bytes": 0, "hit_blocks": 0}
        self.wire_s: list[float] = []
        self.queued_s: list[float] = []
        self.handoff_s: list[float] = []

    def on_event(self, ev: Event) -> None:
        match ev:
            case BatchStepped():
                self.busy_s[ev.node] += ev.duration
                self.prefill_tokens[ev.node] += ev.prefill_tokens
                self.decode_tokens[ev.node] += ev.decode_seqs * ev.iterations
            case DecodeRouted(node=str()):
                self.split["remote" if ev.remote else "local"] += 1
            case KVTransferWaiting():
                self.split["waited_for_room"] += 1
            case KVTransferStarted():
                self._started(ev)
            case KVTransferDone():
                self.handoff_s.append(ev.waited_s)

    def _started(self, ev: KVTransferStarted) -> None:
        t = self.transfer
        t["count"] += 1
        t["blocks"] += ev.blocks
        t["bytes"] += ev.bytes
        t["hit_blocks"] += ev.hit_blocks
        self.wire_s.append(ev.seconds)
        self.queued_s.append(ev.queued_s)

    def pools(self, sim_time: float) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for role in ("prefill", "decode", "both"):
            nodes = [n for n, r in self.roles.items() if r == role]
            if not nodes:
                continue
            busy = sum(self.busy_s[n] for n in nodes)
            out[role] = {
                "nodes": nodes,
                "utilisation": round(busy / (len(nodes) * sim_time), 6) if sim_time else 0.0,
                "prefill_tokens": sum(self.prefill_tokens[n] for n in nodes),
                "decode_tokens": sum(self.decode_tokens[n] for n in nodes),
            }
        return out

    def report(self, sim_time: float, links: dict | None) -> dict:
        """The `disaggregation` section (docs/results.md)."""
        return {
            "pools": self.pools(sim_time),
            "requests": dict(self.split),
            "transfers": {
                **self.transfer,
                "wire_ms": summarize(self.wire_s),
                "queued_ms": summarize(self.queued_s),
                "handoff_ms": summarize(self.handoff_s),
            },
            "links": [
                {"from": src, "to": dst, "kind": link.spec.kind, "transfers": link.transfers, "bytes": link.bytes,
                 "busy_s": round(link.busy_s, 6), "queued_s": round(link.queued_s, 6)}
                for (src, dst), link in (links or {}).items() if link.transfers
            ],
        }
