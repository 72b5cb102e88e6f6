"""One line of run-wide figures: hit rates, rejection rate, throughput, evictions."""

from __future__ import annotations

from textual.widgets import Static


def stats_text(sim) -> str:
    m = sim.metrics
    t = sim.now
    done = m.exact_hits + m.prefix_hits + m.misses
    rps = m.completed / t if t else 0.0
    tps = m.output_tokens / t if t else 0.0
    return (
        f"hits {m.request_hit_rate:.0%} (exact {m.exact_hits} prefix {m.prefix_hits} miss {m.misses} of {done})"
        f" · cached tokens {m.token_hit_rate:.0%}"
        f" · rejected {m.rejected}/{m.arrived} ({m.rejection_rate:.1%})"
        f" · {rps:.2f} req/s {tps:,.0f} tok/s"
        f" · evicted {m.evicted_blocks:,} · preempted {m.preempted}"
        + _wal_text(sim)
    )


def _wal_text(sim) -> str:
    cp = getattr(sim, "control_plane", None)
    if cp is None:
        return ""
    w = cp.counters()
    state = " (recovering)" if cp.down else ""
    size = w.get("bytes", 0)
    size_text = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
    rec = w.get("recoveries", 0)
    return (
        f" · WAL {w.get('records', 0):,} records {size_text}, "
        f"{w.get('snapshots', 0)} snapshots, {rec} recover{'y' if rec == 1 else 'ies'}{state}"
    )


class StatsLine(Static):
    DEFAULT_CSS = """
    StatsLine { height: auto; color: $text; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes, markup=False)
        self._text = None

    def show(self, sim) -> None:
        text = stats_text(sim)
        if text != self._text:
            self._text = text
            self.update(text)
