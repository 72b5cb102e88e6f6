"""One request's life, from the run's journal: arrival, routing with every candidate,
queueing and scheduling, prefill chunks (the blocks it stored), first token, preemptions,
and how it ended, each with its sim time."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from kvtui.events import Event

WHAT = {
    "arrived": "arrived at the router",
    "routed": "routed",
    "scheduled": "scheduled",
    "stored": "stored",
    "evicted": "evicted others' blocks for room",
    "first_token": "first token",
    "preempted": "preempted",
    "completed": "completed",
    "rejected": "rejected",
    "node_down": "its node failed",
}


def request_of(ev: Event | None) -> str | None:
    """The request an event is about (None for node- or cluster-level events)."""
    if ev is None:
        return None
    for name in ("request", "for_request", "needed_by"):
        r = getattr(ev, name, None)
        if isinstance(r, str) and r and not r.startswith("pin:"):
            return r
    return None


def life_lines(request: str, life: tuple[Event, ...]) -> list[str]:
    """The life as text lines (shared with the tests)."""
    if not life:
        return [f"{request}: nothing known (not arrived yet, or older than the journal keeps)."]
    out = [f"{request}: {len(life)} events so far"]
    t0 = life[0].t
    for ev in life:
        head = f"{ev.t:.3f}s (+{ev.t - t0:.3f})  {WHAT.get(ev.kind, ev.kind)}"
        out.append(head + _detail(ev))
        if ev.kind == "routed":
            ranked = sorted(ev.candidates, key=lambda c: -c.score)
            for c in ranked:
                feats = " ".join(f"{k}={v:g}" for k, v in c.features)
                mark = "▸" if c.node == ev.node else "─"
                note = f"  ({c.note})" if c.note else ""
                out.append(f"└─{mark} {c.node:<10} score {c.score:9.3f}  {feats}{note}")
    return out


def _detail(ev: Event) -> str:
    k = ev.kind
    if k == "arrived":
        return f": {ev.prompt_tokens} prompt + {ev.output_tokens} output tokens, session {ev.session}, group {ev.group}, turn {ev.turn}"
    if k == "routed":
        return f" to {ev.node or 'nowhere'} by {ev.policy}: {ev.reason} (margin {ev.margin:g})"
    if k == "scheduled":
        again = " again (resumed)" if ev.resumed else ""
        return f"{again} on {ev.node}: {ev.hit_blocks}/{ev.prompt_blocks} prompt blocks from cache, {ev.new_blocks} new, {ev.free_blocks} free"
    if k == "stored":
        return f" {len(ev.keys)} full blocks on {ev.node} (prefill/decode chunk from block {ev.first_index}, {ev.medium})"
    if k == "evicted":
        return f": {len(ev.keys)} blocks on {ev.node}"
    if k == "first_token":
        return f" on {ev.node}: TTFT {ev.ttft * 1000:.1f} ms"
    if k == "preempted":
        return f" on {ev.node} for {ev.needed_by}: {ev.freed_blocks} blocks freed, {ev.tokens_done} tokens to recompute"
    if k == "completed":
        return f" on {ev.node}: {ev.hit} hit, {ev.cached_tokens} cached tokens, TTFT {ev.ttft * 1000:.1f} ms, E2E {ev.e2e:.2f} s"
    if k == "rejected":
        return f": {ev.reason}"
    if k == "node_down":
        return f" ({ev.node}); re-routed" if ev.rerouted else f" ({ev.node})"
    return ""


class LifeScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    LifeScreen { align: center middle; }
    LifeScreen > VerticalScroll {
        width: 100%; max-width: 140; height: 100%; border: round $primary; background: $surface; padding: 0 1;
        overflow-x: auto;
    }
    LifeScreen Static { width: auto; text-wrap: nowrap; }
    """
    BINDINGS = [
        Binding("escape,i", "app.pop_screen", "Close"),
        Binding("question_mark", "app.help", "Help", key_display="?"),
        Binding("q", "app.pop_screen", "Quit this view"),
    ]

    def __init__(self, runner, request: str):
        super().__init__()
        self.runner = runner
        self.request = request

    def compose(self) -> ComposeResult:
        lines = life_lines(self.request, self.runner.journal.life(self.request))
        with VerticalScroll() as vs:
            vs.border_title = f"Life of {self.request} (escape closes)"
            yield Static(Text("\n".join(lines), no_wrap=True))
        yield Footer()
