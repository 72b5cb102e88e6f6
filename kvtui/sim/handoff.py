"""Prefill/decode handoff: a request prefilled on one node moves, with its KV, to its decode node.

The path, as vLLM's NixlConnector runs it under llm-d's or Dynamo's P/D routing:

1. The prefill node finishes the prompt (kvtui/sim/node.py hands the request here instead of
   producing its first token) and keeps the request's blocks allocated. A request whose decode
   node is still to be picked (Dynamo routes the decode request when the prefill returns) gets
   it now from the router (`pick_decode`); if no decode node can take it, it is rejected with
   the reason and its prefilled blocks are freed.
2. The decode node takes its own cached prefix and allocates the rest of the prompt
   (`Node.reserve`). Without room now (no free batch slot, or not enough blocks even after
   evicting idle cached ones) the request waits, FIFO per decode node, and is tried again each
   time that node finishes an iteration; or, with `router.disaggregation.when_decode_full:
   reject`, it is rejected with the numbers.
3. The missing blocks travel over the pair's link (kvtui/sim/transfer.py: queue, then bytes /
   bandwidth + latency; CPU-tier blocks of the decode node load meanwhile, in parallel).
4. On arrival the prefill node frees its copy (still cached there), the decode node registers
   the blocks and runs the request, whose first token comes from there: its TTFT includes the
   wait and the transfer.

A failure of either node during the handoff loses the KV in flight: the request starts over
and is routed again, as a request on a failed node is. The loss is found when the handoff next
acts (its transfer would land, or its decode node has room), so such a request is not among the
`rerouted` of the `NodeDown` event; its new `RouteDecided` follows then.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable

from kvtui.events import BatchStepped, Event, KVTransferDone, KVTransferStarted, KVTransferWaiting, RequestRejected
from kvtui.sim.request import DECODE_AT_PREFILL_END, Request
from kvtui.sim.transfer import Link

if TYPE_CHECKING:
    from kvtui.sim.bus import Bus
    from kvtui.sim.node import Node


@dataclass(slots=True)
class _Handoff:
    req: Request
    src: "Node"
    dst: "Node"
    held: list[int] | None  # the request's blocks on the prefill node (None once freed)
    src_life: int
    dst_life: int
    since: float  # end of the prefill
    blocks: int = 0  # blocks moved
    nbytes: int = 0
    reserved: bool = False  # the decode node allocated the request's blocks
    ready: int = 0  # blocks the decode node already held (its cached prefix): they do not move


class Handoffs:
    def __init__(
        self,
        bus: "Bus",
        nodes: dict[str, "Node"],
        links: dict[tuple[str, str], Link],
        block_bytes: dict[str, int],
        reject_when_full: bool,
        on_finish: Callable[[Request, str], None],
        resubmit: Callable[[Request], None],
        pick_decode: Callable[[Request, str], tuple[str | None, str]],
    ):
        self.bus = bus
        self.env = bus.env
        self.nodes = nodes
        self.links = links
        self.block_bytes = block_bytes  # per decode node
        self.reject_when_full = reject_when_full
        self.on_finish = on_finish
        self.resubmit = resubmit
        self.pick_decode = pick_decode  # (request, prefill node) -> (decode node or None, reason)
        self.waiting: dict[str, deque[_Handoff]] = {}
        self.in_flight = 0  # prefilled and not yet running on the decode node
        self.moving: dict[str, _Handoff] = {}  # request id -> its transfer on the link (started, not landed)
        for node in nodes.values():
            node.handoff = self.prefilled
        bus.listen(self._on_batch, (BatchStepped,))

    def prefilled(self, src: "Node", req: Request) -> None:
        """`src` finished the prompt of a request that decodes elsewhere."""
        assert req.decode_node is not None  # the node hands over only requests that decode elsewhere
        if req.decode_node == DECODE_AT_PREFILL_END and not self._pick(src, req):
            return
        dst = self.nodes[req.decode_node]
        h = _Handoff(req, src, dst, req.blocks, src.lives, dst.lives, self.env.now)
        req.blocks = []
        src.outbound += 1
        self.in_flight += 1
        queue = self.waiting.get(dst.name)
        if queue or not self._start(h):
            self._wait(h)

    def _pick(self, src: "Node", req: Request) -> bool:
        """The router picks the decode node now; False (the request rejected) if none can take it."""
        node, reason = self.pick_decode(req, src.name)
        if node is not None:
            req.decode_node = node
            return True
        src.drop_blocks(req.blocks)
        req.blocks = []
        self.bus.emit(RequestRejected, request=req.id, node=None, reason=reason)
        self.on_finish(req, "rejected")
        return False

    def _wait(self, h: _Handoff) -> None:
        dst = h.dst
        dst.settle()  # mid-segment, the blocks its iterations begun by now have taken
        reason = (f"{dst.name} has no room: {dst.kv.free_count} blocks free, "
                  f"{len(dst.running)} running + {dst.inbound} arriving of max_num_seqs {dst.max_num_seqs}")
        if self.reject_when_full:
            self._drop_source(h)
            self.in_flight -= 1
            self.bus.emit(RequestRejected, request=h.req.id, node=dst.name, reason=f"{reason} (when_decode_full: reject)")
            self.on_finish(h.req, "rejected")
            return
        self.waiting.setdefault(dst.name, deque()).append(h)
        self.bus.emit(KVTransferWaiting, request=h.req.id, prefill_node=h.src.name, decode_node=dst.name,
                      blocks=len(h.held or ()), reason=reason)

    def _on_batch(self, ev: Event) -> None:
        """The node ran an iteration (requests may have finished): start whom it has room for."""
        match ev:
            case BatchStepped(node=node):
                queue = self.waiting.get(node)
                while queue and self._start(queue[0]):
                    queue.popleft()

    def _start(self, h: _Handoff) -> bool:
        """Reserve on the decode node and put the blocks on the link; False if no room yet."""
        if self._lost(h):
            return True
        room = h.dst.reserve(h.req)
        if room is None:
            return False
        ready, load_s = room
        h.reserved = True
        h.ready = ready
        self.moving[h.req.id] = h
        total = -(-h.req.prompt_tokens // h.dst.block_size)
        h.blocks = total - ready
        h.nbytes = h.blocks * self.block_bytes[h.dst.name]
        link = self.links[(h.src.name, h.dst.name)]
        queued, seconds = link.book(self.env.now, h.nbytes) if h.blocks else (0.0, 0.0)
        self.bus.emit(KVTransferStarted, request=h.req.id, prefill_node=h.src.name, decode_node=h.dst.name,
                      blocks=h.blocks, hit_blocks=ready, bytes=h.nbytes, link=link.spec.kind,
                      queued_s=queued, seconds=seconds)
        self.env.call_later(max(queued + seconds, load_s), partial(self._arrived, h, ready))
        return True

    def _arrived(self, h: _Handoff, ready: int, _timer: object = None) -> None:
        if self._lost(h):
            return
        self._drop_source(h)
        self.in_flight -= 1
        self.bus.emit(KVTransferDone, request=h.req.id, prefill_node=h.src.name, decode_node=h.dst.name,
                      blocks=h.blocks, bytes=h.nbytes, waited_s=self.env.now - h.since)
        h.dst.accept(h.req, ready)

    def _lost(self, h: _Handoff) -> bool:
        """A node of the pair failed since the prefill: the KV is gone, the request starts over."""
        if h.src.lives == h.src_life and h.dst.lives == h.dst_life:
            return False
        self._drop_source(h)
        if h.reserved and h.dst.lives == h.dst_life:  # the decode node lives: give its blocks back
            h.dst.kv.free(h.req)
            h.dst.inbound -= 1
        self.in_flight -= 1
        h.req.restart()
        self.resubmit(h.req)
        return True

    def _drop_source(self, h: _Handoff) -> None:
        self.moving.pop(h.req.id, None)
        if h.held is not None and h.src.lives == h.src_life:
            h.src.drop_blocks(h.held)
            h.src.outbound -= 1
        h.held = None

    def blocks_in_flight(self, node: str) -> list[int]:
        """The blocks of `node` a transfer is moving now (for the views, kvtui/sim/view.py): on a
        prefill node, the copies being read; on a decode node, the blocks being written. The
        decode node's cached prefix (`ready` blocks) does not move, so it is not among them."""
        out: list[int] = []
        for h in self.moving.values():
            if h.src.name == node and h.held is not None:
                out.extend(h.held[h.ready:])
            if h.dst.name == node:
                out.extend(h.req.blocks[h.ready:])
        return out

    def transfer_at(self, node: str, index: int) -> tuple[str, str, str, int] | None:
        """(request, prefill node, decode node, blocks moved) of the transfer moving block
        `index` of `node` now, or None (the inspector's line, kvtui/sim/view.py)."""
        for h in self.moving.values():
            src = h.src.name == node and h.held is not None and index in h.held[h.ready:]
            if src or (h.dst.name == node and index in h.req.blocks[h.ready:]):
                return h.req.id, h.src.name, h.dst.name, h.blocks
        return None
