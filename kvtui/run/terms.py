"""Who led which term, and when: the bands the app draws under its timeline for a replicated
control plane (a band per term, its leader named, a gap where no member led).

A fold over the run's events, kept in the journal so it steps back with it. The group starts as
a running cluster does (kvtui/sim/raft/group.py `_bootstrap`): m1 leads term 1 from time 0. A
term's band ends when its leader steps down or goes down; a new leader opens the next one. Terms
in which nobody won (a candidate's term, a cut member's climbing term) have no band: the gap
between bands is the time without a leader.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvtui.events import Event, MetadataLeaderElected, MetadataMemberDown, MetadataStepDown


TERM_EVENTS = (MetadataLeaderElected, MetadataStepDown, MetadataMemberDown)


@dataclass(frozen=True, slots=True)
class Term:
    term: int
    leader: str
    start: float
    end: float | None = None  # None: it still leads


class Terms:
    def __init__(self) -> None:
        self.bands: list[Term] = [Term(1, "m1", 0.0)]

    def on_event(self, ev: Event) -> None:
        match ev:
            case MetadataLeaderElected(t=t, member=member, term=term):
                self._close(t)
                self.bands.append(Term(term, member, t))
            case MetadataStepDown(t=t, member=member) | MetadataMemberDown(t=t, member=member, was_leader=True):
                if self.bands[-1].leader == member:
                    self._close(t)

    def _close(self, t: float) -> None:
        last = self.bands[-1]
        if last.end is None:
            self.bands[-1] = replace(last, end=t)


def columns(bands: list[Term], now: float, span: float, width: int) -> list[tuple[int, int, Term]]:
    """(first column, end column, band) of each band up to `now` on a `width`-column timeline that
    stands for `span` sim seconds (the timeline's scale: column = int(t / span * (width - 1)))."""
    out = []
    for band in bands:
        if band.start > now:
            break
        end = now if band.end is None else min(band.end, now)
        c0, c1 = (min(width - 1, int(t / span * (width - 1))) for t in (band.start, end))
        out.append((c0, max(c1, c0 + 1), band))
    return out
