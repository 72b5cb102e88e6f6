"""Two runs side by side, kept at the same time (the app's `--vs` comparison, and a recording
beside its counterfactual replay)."""

from __future__ import annotations

from typing import Iterable

from kvtui.events import Event
from kvtui.run.drive import FOLDABLE
from kvtui.run.source import Navigable


class Lockstep:
    """Two runs kept at the same time on one clock, for a side-by-side comparison. Two runs of
    one scenario (same seed, same workload, different policies) share their sim time: the
    workload draws from its own RNG stream (see kvtui/sim/engine.py), so both see the same
    arrivals whatever the policy. A side whose own clock starts elsewhere is given its `shift`:
    the shared time is its own time plus that (a recording's clock starts at its first delivery,
    its replay's sim time at the first routing decision, kvtui/run/counterfactual.py)."""

    def __init__(self, left: Navigable, right: Navigable, shift: tuple[float, float] = (0.0, 0.0)):
        self.left = left
        self.right = right
        self.shift = shift

    @property
    def now(self) -> float:
        return min(self.left.now + self.shift[0], self.right.now + self.shift[1])

    @property
    def ended(self) -> bool:
        return self.left.ended and self.right.ended

    def own_time(self, side: Navigable, t: float) -> float:
        """Shared time `t` on `side`'s own clock (never before its start)."""
        return max(0.0, t - self.shift[side is self.right])

    def shared_time(self, side: Navigable) -> float:
        return side.now + self.shift[side is self.right]

    def advance(self, target: float, budget_s: float) -> bool:
        """Both runs toward shared time `target`, the budget shared; True when both are there."""
        a = self.left.advance(self.own_time(self.left, target), budget_s / 2)
        b = self.right.advance(self.own_time(self.right, target), budget_s / 2)
        return a and b

    def step(self, fold: Iterable[type[Event]] = FOLDABLE) -> Event | None:
        """The next event of whichever run is behind, then the other run to the same time."""
        behind = self.shared_time(self.left) <= self.shared_time(self.right) or self.right.ended
        lead, other = (self.left, self.right) if behind else (self.right, self.left)
        ev = lead.step(fold)
        if ev is None:
            ev = other.step(fold)
            lead, other = other, lead
            if ev is None:
                return None
        other.advance(self.own_time(other, self.shared_time(lead)), float("inf"))
        return ev
