"""The links between members: a fixed one-way latency, members that are down, and partitions.

A partition cuts the peer links between a set of members and the rest (what a TCP proxy on
etcd's peer URLs does); clients (the router, the KV-event publishers) still reach every member.
A message is dropped when its link is cut or its receiver is down at delivery.
"""

from __future__ import annotations


class Network:
    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.cuts: list[frozenset[str]] = []  # each: one side of a partition

    def cut(self, side: frozenset[str]) -> None:
        self.cuts.append(side)

    def heal(self, side: frozenset[str]) -> None:
        self.cuts.remove(side)

    def linked(self, a: str, b: str) -> bool:
        """Can `a` reach `b`? Not when some partition puts them on opposite sides."""
        return all((a in side) == (b in side) for side in self.cuts)

    def reachable(self, member: str, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if self.linked(member, n)]
