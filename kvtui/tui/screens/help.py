"""The help screen: every control, the block map's key, and what each panel shows."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kvtui.run.journal import HIT_WINDOW
from kvtui.tui.widgets.block_map import BARS, GLYPH_CACHED, GLYPH_DOWN, GLYPH_FREE, GLYPH_MOVING, GLYPH_PINNED, GLYPH_USED

BLOCK_MAPS = ("Block maps", "one per node; each cell is a KV block (or, on small screens, a run of k blocks: the label "
              "then says 1:k). Label: used %, cached-idle %, running / waiting requests, prefix hit rate of its last "
              f"{HIT_WINDOW} completed requests (h; forgotten when it fails); ✖ DOWN when the node has failed. A real "
              "engine's blocks are all cached (its KV events say what is held, not who uses it).")
AROUND: tuple[tuple[str, str], ...] = (
    ("Why", "the current event (the one just stepped to, or the highlighted log line) explained with its "
     "numbers; it scrolls when the text is long."),
    ("Timeline", "sim time from 0 to the end: ● now, 1 2 3 story chapters, e r p the first eviction / "
     "rejection / preemption, ▼ ▲ node down / up, ✸ control-plane crash, ◆ ⊘ a new metadata leader / a "
     "member cut off, g ↻ a real engine's lost gap / restart. Click it to go to that moment. A replicated "
     "control plane's terms are bands below it (t2 m3: term 2, led by m3; · no leader); then the story's chapter."),
    ("Inspector", "z: one node block by block; arrows or the mouse move the cursor, the panel shows the "
     "block's state, owner, key, parent, ref count, LRU position, tier."),
    ("Narrow screens", "show one lower panel at a time: v (or a click on its name) switches."),
)


def panel_rows() -> list[tuple[str, str]]:
    """What each part of the screen shows: the maps, every panel of tui/panels.py (its row's
    `about`), and the parts around them."""
    from kvtui.tui.panels import PANELS

    return [BLOCK_MAPS, *((p.label, p.about) for p in PANELS), *AROUND]


def two_columns(rows: Sequence[tuple[str, str]], indent: int = 0) -> Table:
    """Names in a column of their own, text wrapping beside them: at 80 columns the text
    lines (a key's help, a panel's description) wrapped back to the left edge, under the keys."""
    t = Table.grid()
    t.add_column(no_wrap=True, width=indent + max((len(k) for k, _ in rows), default=3) + 2)
    t.add_column()
    for name, text in rows:
        t.add_row(Text(" " * indent + name), Text(text))  # plain text: a "[b]" in help stays as typed
    return t


def legend_text() -> str:
    return "\n".join(
        [
            f"  {GLYPH_USED}  in use by a running request     {GLYPH_PINNED}  pinned (preloaded system prompt, never evicted)",
            f"  {GLYPH_CACHED}  cached but idle (evictable)      {GLYPH_FREE}  free (empty)",
            f"  {BARS[0]}{BARS[3]}{BARS[6]} a cell of several blocks: bar height = share in use (tinted when some rest is cached)",
            f"  {GLYPH_DOWN}  the node is down                 colour = prefix group that owns the block",
            f"  {GLYPH_MOVING}  in flight: a KV transfer is moving it, on both the prefill and the decode node's map",
        ]
    )


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100%; max-width: 100; height: 100%; max-height: 44;
        border: round $primary; background: $surface; padding: 0 1;
    }
    HelpScreen .help-title { text-style: bold; color: $accent; }
    """

    BINDINGS = [
        Binding("escape,question_mark,q", "app.pop_screen", "Close help"),
    ]

    def __init__(self, rows: list[tuple[str, str]], panels: Sequence[tuple[str, str]] | None = None, title: str = "kvtui help",
                 palette: bool = True):
        super().__init__()
        self.rows, self.panels, self.title_text, self.palette = rows, panels or panel_rows(), title, palette

    def compose(self) -> ComposeResult:
        with VerticalScroll() as vs:
            vs.border_title = f"{self.title_text} (escape closes)"
            palette = " (also in the command palette, ctrl+p)" if self.palette else ""
            yield Static(f"Controls{palette}", classes="help-title", markup=False)
            yield Static(two_columns(self.rows, indent=2))
            yield Static("Block map key", classes="help-title", markup=False)
            yield Static(legend_text(), markup=False)
            yield Static("Panels", classes="help-title", markup=False)
            yield Static(two_columns(self.panels))
