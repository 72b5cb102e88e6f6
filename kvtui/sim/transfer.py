"""The KV transfer of prefill/decode disaggregation: how many bytes a prefilled prompt's blocks
are, which link they take, and how long they queue and travel on it.

What real systems do, and what kvtui matches:

- vLLM's NixlConnector (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py, vLLM v1
  in 2025; newer trees split it into nixl/pull_scheduler.py) has the decode worker read the prefill worker's blocks straight from GPU memory: each
  GPU of the decode tensor-parallel group reads its own shard of every block, so the GPUs move
  their shards in parallel, each over its own path. NIXL picks the path (UCX): NVLink between
  GPUs of one server, the GPU's RDMA network card between servers (Dynamo's disaggregation
  design, docs/design_docs/disagg_serving.md: "NVLink, InfiniBand/UCX"). kvtui moves
  `blocks x bytes per block` where a block's bytes are what the decode group stores for
  `block_size` tokens (the model's K and V, every layer, at the KV dtype; replicated KV heads
  counted once per GPU that holds them, as vLLM's `get_num_kv_heads` lays them out), over
  `min(prefill TP, decode TP)` lanes in parallel: time = bytes / (lanes x lane bandwidth) +
  latency. The lane figures are the hardware profile's (`interconnect_gb_s`, `rdma_gb_s`, with
  their cited sources in kvtui/profiles/hardware.yaml); a pair of nodes on different hardware
  runs at the slower side's bandwidth and the larger latency.
- Only the blocks the decode node lacks move: the decode worker first looks up its own prefix
  cache (vLLM's scheduler asks the connector for the tokens beyond its local hit) and reads
  the rest.
- Transfers between one pair of nodes queue first-come first-served on their link (one NIXL
  agent pair, one transfer at a time at full bandwidth); transfers between other pairs run
  in parallel. Contention on a shared network card or switch between different pairs is not
  modelled.
- Blocks stay allocated on both sides in flight: the prefill worker frees its copy only when
  the decode worker has read it (NixlConnector's `request_finished` delays the free), and the
  decode worker allocated its blocks before the read began.

The path and its figures are resolved from the node plans (kvtui/scenario/links.py, which the
loader's checks read too); this module keeps the links' queues. Times only: the engine
schedules the end of each transfer (kvtui/sim/handoff.py).
"""

from __future__ import annotations

from typing import Sequence

from kvtui.errors import InputError
from kvtui.profiles import Model
from kvtui.scenario.links import LinkSpec, block_bytes, link_problem, link_spec
from kvtui.scenario.plan import NodePlan


class Link:
    """A link in use: transfers on it run one after another, first come first served."""

    __slots__ = ("spec", "free_at", "transfers", "bytes", "busy_s", "queued_s")

    def __init__(self, spec: LinkSpec) -> None:
        self.spec = spec
        self.free_at = 0.0
        self.transfers = 0
        self.bytes = 0
        self.busy_s = 0.0
        self.queued_s = 0.0

    def book(self, now: float, nbytes: int) -> tuple[float, float]:
        """Queue a transfer of `nbytes`: (seconds it waits for the link, seconds it then takes)."""
        start = max(now, self.free_at)
        seconds = self.spec.seconds(nbytes)
        self.free_at = start + seconds
        self.transfers += 1
        self.bytes += nbytes
        self.busy_s += seconds
        self.queued_s += start - now
        return start - now, seconds


def build_links(plans: Sequence[NodePlan], model: Model, block_size: int) -> tuple[dict[tuple[str, str], Link], dict[str, int]]:
    """A link for every (prefill-capable, decode-capable) pair of distinct nodes, and each decode-
    capable node's bytes per block."""
    sources = [p for p in plans if p.spec.role != "decode"]
    sinks = [p for p in plans if p.spec.role != "prefill"]
    pairs = [(s, d) for s in sources for d in sinks if s is not d]
    for s, d in pairs:  # the loader checks this for clusters with roles; a policy chosen later is checked here
        if problem := link_problem(s, d):
            raise InputError.one("router.policy", None, f"a prefill/decode policy moves KV, and {problem}")
    links = {(s.spec.name, d.spec.name): Link(link_spec(s, d)) for s, d in pairs}
    return links, {d.spec.name: block_bytes(model, d, block_size) for d in sinks}
