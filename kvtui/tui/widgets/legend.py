"""The block map's key: one glyph per state, one colour per prefix group (from the theme).

The in-flight glyph (⇄, blocks a KV transfer is moving) is listed only when some node has a
prefill or decode role: a colocated cluster never moves KV, and its key reads as before."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.widget import Widget

from kvtui.tui.themes import DEFAULT_VARIABLES, OWNER_COLOURS
from kvtui.tui.widgets.block_map import (
    BARS,
    GLYPH_CACHED,
    GLYPH_DOWN,
    GLYPH_FREE,
    GLYPH_MOVING,
    GLYPH_PINNED,
    GLYPH_USED,
    owner_slot,
)


class Legend(Widget):
    DEFAULT_CSS = """
    Legend { height: auto; max-height: 3; }
    Legend > .legend--dim { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"legend--dim"}

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.refresh())

    def group_names(self) -> list[str]:
        return self.runner.group_names

    def moves_kv(self) -> bool:
        """Whether any node has a prefill/decode role (only then can blocks be in flight)."""
        return any(n.role != "both" for n in self.runner.view().nodes)

    def render(self) -> Text:
        var = {**DEFAULT_VARIABLES, **getattr(self.app, "theme_variables", {})}
        dim = self.get_component_rich_style("legend--dim")

        def col(name: str) -> Style:
            try:
                return Style(color=Color.parse(var.get(name, DEFAULT_VARIABLES[name])).rich_color)
            except Exception:
                return Style(color=Color.parse(DEFAULT_VARIABLES[name]).rich_color)

        moving = self.moves_kv()
        full = [
            (GLYPH_USED, " in use  "),
            (GLYPH_PINNED, " pinned  "),
            (GLYPH_CACHED, " cached  "),
            (GLYPH_FREE, " free  "),
            *([(GLYPH_MOVING, " in flight  ")] if moving else []),
            (BARS[1] + BARS[4] + BARS[6], " mix  "),
            (GLYPH_DOWN, " down  "),
        ]
        short = [
            (GLYPH_USED, "use "),
            (GLYPH_PINNED, "pin "),
            (GLYPH_CACHED, "cached "),
            (GLYPH_FREE, "free "),
            *([(GLYPH_MOVING, "moving ")] if moving else []),
            (BARS[1] + BARS[4] + BARS[6], "mix "),
            (GLYPH_DOWN, "down "),
        ]
        known = {n: i % OWNER_COLOURS for i, n in enumerate(self.group_names())}
        width = self.size.width
        text = Text()
        # Every group is listed: when the short form does not fit one line either, it wraps.
        for states in (full, short):
            text = Text(no_wrap=states is full, overflow="fold")
            for glyph, label in states:
                text.append(glyph, col("block-down") if glyph == GLYPH_DOWN else Style())
                text.append(label, dim)
            if known:
                text.append("│ ", dim)
                for name in known:
                    text.append("█", col(f"block-owner-{owner_slot(name, known)}"))
                    text.append(f"{name} ", Style())
            if text.cell_len <= width:
                break
        return text
