"""The loader's checks of prefill/decode roles (docs/disaggregation.md): a disaggregated cluster
needs a node that can prefill, one that can decode, a prefill/decode policy to split requests
between them, and a link with a bandwidth between every pair KV may cross."""

from __future__ import annotations

from typing import Callable

from kvtui.scenario.model import Scenario
from kvtui.scenario.plan import NodePlan
from kvtui.scenario.policies import PAIRED_POLICIES, POLICIES
from kvtui.scenario.links import link_problem

Report = Callable[[str, str], None]


def check_roles(scenario: Scenario, plans: list[NodePlan], report: Report) -> None:
    nodes = scenario.cluster.nodes
    roles = [spec.role for spec in nodes]
    if all(role == "both" for role in roles):
        return
    first = next(i for i, role in enumerate(roles) if role != "both")
    policy = scenario.router.policy
    if policy in POLICIES and not POLICIES[policy].paired:
        report(f"cluster.nodes[{first}].role", f"cluster.nodes[{first}].role: roles need a prefill/decode policy "
               f"({', '.join(PAIRED_POLICIES)}); router.policy is {policy}")
    for missing, role in (("prefill", "decode"), ("decode", "prefill")):
        if all(r == role for r in roles):
            report("cluster.nodes", f"cluster.nodes: no node can {missing} (every node has role: {role})")
    _check_links(plans, report)


def _check_links(plans: list[NodePlan], report: Report) -> None:
    """Every prefill-capable -> decode-capable pair needs a bandwidth on its path."""
    for i, src in enumerate(plans):
        for dst in plans:
            if src is dst or src.spec.role == "decode" or dst.spec.role == "prefill":
                continue
            if src.hardware is None or dst.hardware is None:
                continue  # unknown hardware is reported already
            if problem := link_problem(src, dst):
                report(f"cluster.nodes[{i}]", f"cluster.nodes[{i}]: {problem}")
                return
