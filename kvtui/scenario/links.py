"""The path KV takes from a prefill node to a decode node, resolved from the two node plans:
NVLink within a host, the GPUs' RDMA cards between hosts, one lane per GPU of the smaller
tensor-parallel group, and the bytes of one block as the decode node stores it. The cost model
and its sources are described in kvtui/sim/transfer.py; the loader's checks read this too.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.profiles import Model
from kvtui.scenario.plan import NodePlan


@dataclass(frozen=True, slots=True)
class LinkSpec:
    """One node pair's path: `lanes` GPU links in parallel, each at `lane_bytes_per_s`."""

    kind: str  # "NVLink" within a host, "RDMA" between hosts
    lanes: int
    lane_bytes_per_s: float
    latency_s: float

    def seconds(self, nbytes: int) -> float:
        """bytes / (lanes x lane bandwidth) + latency: the hand calculation, nothing else."""
        return nbytes / (self.lanes * self.lane_bytes_per_s) + self.latency_s


def same_host(a: NodePlan, b: NodePlan) -> bool:
    return a.spec.host is not None and a.spec.host == b.spec.host


def link_spec(src: NodePlan, dst: NodePlan) -> LinkSpec:
    """The path from a prefill node to a decode node (both plans have known hardware)."""
    hs, hd = src.hardware, dst.hardware
    assert hs is not None and hd is not None  # the loader refuses unknown hardware
    lanes = min(src.tp, dst.tp)
    if same_host(src, dst):
        return LinkSpec("NVLink", lanes, min(hs.link_bytes_per_s, hd.link_bytes_per_s), max(hs.link_latency_s, hd.link_latency_s))
    return LinkSpec("RDMA", lanes, min(hs.rdma_bytes_per_s, hd.rdma_bytes_per_s), max(hs.rdma_latency_s, hd.rdma_latency_s))


def link_problem(src: NodePlan, dst: NodePlan) -> str | None:
    """Why KV cannot move from `src` to `dst` (a missing bandwidth figure), else None."""
    spec = link_spec(src, dst)
    if spec.lane_bytes_per_s > 0:
        return None
    key = "interconnect_gb_s" if spec.kind == "NVLink" else "rdma_gb_s"
    gpus = sorted({p.hardware.name for p in (src, dst) if p.hardware is not None})
    return f"KV from {src.spec.name!r} to {dst.spec.name!r} goes over {spec.kind}, but {' / '.join(gpus)} has no {key}"


def block_bytes(model: Model, dst: NodePlan, block_size: int) -> int:
    """The bytes of one block as the decode node's tensor-parallel group stores it."""
    return model.kv_bytes_per_token_per_gpu(dst.tp, dst.kv_dtype) * dst.tp * block_size
