"""Two runs side by side, kept at the same time (the app's `--vs` comparison)."""

from __future__ import annotations

from typing import Iterable

from kvtui.events import Event
from kvtui.run.drive import FOLDABLE
from kvtui.run.source import Navigable


class Lockstep:
    """Two runs of one scenario (same seed, same workload, different policies) kept at the
    same sim time, for a side-by-side comparison. The workload draws from its own RNG stream
    (see kvtui/sim/engine.py), so both runs see the same arrivals whatever the policy."""

    def __init__(self, left: Navigable, right: Navigable):
        self.left = left
        self.right = right

    @property
    def now(self) -> float:
        return min(self.left.now, self.right.now)

    @property
    def ended(self) -> bool:
        return self.left.ended and self.right.ended

    def advance(self, target: float, budget_s: float) -> bool:
        """Both runs toward `target`, the budget shared; True when both are there."""
        a = self.left.advance(target, budget_s / 2)
        b = self.right.advance(target, budget_s / 2)
        return a and b

    def step(self, fold: Iterable[type[Event]] = FOLDABLE) -> Event | None:
        """The next event of whichever run is behind, then the other run to the same time."""
        lead, other = (self.left, self.right) if self.left.now <= self.right.now or self.right.ended else (self.right, self.left)
        ev = lead.step(fold)
        if ev is None:
            ev = other.step(fold)
            lead, other = other, lead
            if ev is None:
                return None
        other.advance(lead.now, float("inf"))
        return ev
