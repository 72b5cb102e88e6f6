"""One line of run-wide figures: hit rates, rejection rate, throughput, SLOs, evictions."""

from __future__ import annotations

from textual.widgets import Static

from kvtui.run.narrate import plural
from kvtui.tui.widgets.in_place import update_in_place


def stats_text(run) -> str:
    """Token hit rate first (the share of prompt tokens served from cache, the figure a serving
    engineer reads), the request hit rate beside it; SLO attainment and goodput when the
    workload sets SLOs; shed requests when any were shed."""
    m = run.metrics
    t = run.now
    done = m.exact_hits + m.prefix_hits + m.misses
    rps = m.completed / t if t else 0.0
    tps = m.output_tokens / t if t else 0.0
    rejected = f" · rejected {m.rejected}/{m.arrived} ({m.rejection_rate:.1%})"
    if m.shed:
        rejected += f", {m.shed} shed"
    slo = ""
    if m.with_slo:
        slo = f" · SLO met {m.slo_attainment:.0%} ({m.slo_met}/{m.with_slo}) goodput {m.goodput_rps(t):.2f} req/s"
    return (
        f"token hits {m.token_hit_rate:.0%}"
        f" · request hits {m.request_hit_rate:.0%} (exact {m.exact_hits} prefix {m.prefix_hits} miss {m.misses} of {done})"
        + rejected
        + f" · {rps:.2f} req/s {tps:,.0f} tok/s"
        + slo
        + f" · evicted {m.evicted_blocks:,} · preempted {m.preempted}"
        + _routing_text(run)
        + _wal_text(run)
    )


def _routing_text(run) -> str:
    text = run.routing_headline()
    return f" · {text}" if text else ""


def _wal_text(run) -> str:
    w = run.wal_counters()
    if w is None:
        return ""
    state = " (recovering)" if run.control_plane_down else ""
    size = w.get("bytes", 0)
    size_text = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
    return (
        f" · WAL {plural(w.get('records', 0), 'record')} {size_text}, "
        f"{plural(w.get('snapshots', 0), 'snapshot')}, {plural(w.get('recoveries', 0), 'recovery', 'recoveries')}{state}"
    )


class StatsLine(Static):
    DEFAULT_CSS = """
    StatsLine { height: auto; color: $text; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes, markup=False)
        self._text = None

    def show(self, run) -> None:
        text = stats_text(run)
        if text != self._text:
            self._text = text
            update_in_place(self, text)
