"""Builders the router tests share: a node's routing state as a policy sees it, a request with
SLOs, a model that names itself."""

from __future__ import annotations

from kvtui.sim.request import Request
from kvtui.sim.router.state import NodeState


def state(name, prefix=0, total=10, running=0, waiting=0, free=100, blocks=100, prefill=0, problem=None):
    return NodeState(
        name=name,
        problem=problem,
        prefix=prefix,
        prefix_score=prefix / total if total else 0.0,
        total=total,
        running=running,
        waiting=waiting,
        used_blocks=blocks - free,
        free_blocks=free,
        usable_blocks=blocks,
        prefill_tokens=prefill,
    )


def node(name, *, prefix=0.0, running=1, waiting=0, free=60, tif=0, problem=None) -> NodeState:
    return NodeState(
        name=name,
        problem=problem,
        prefix=int(prefix * 10),
        prefix_score=prefix,
        total=10,
        running=running,
        waiting=waiting,
        used_blocks=100 - free,
        free_blocks=free,
        usable_blocks=100,
        prefill_tokens=tif,
    )


class Stub:
    def describe(self):
        return "fake"


def req(rid="r1", *, ttft=None, tpot=None, sheddable=False, prompt=500) -> Request:
    r = Request(id=rid, session="s", group="g", turn=0, prompt_tokens=prompt, output_tokens=50, block_keys=())
    r.slo_ttft_s, r.slo_tpot_s, r.sheddable = ttft, tpot, sheddable
    return r
