"""The overview strip for big clusters (more than `OVERVIEW_FROM` nodes): every node as one
small cell, so 64 nodes fit on one or two lines of an 80-column screen, while the block map
below shows the selected (focused) node in full.

A node's cell is a bar ▁..█ as high as its share of blocks in use, in the colour of the
prefix group holding most of them; × when it is down; the focused node is drawn reversed. A
click focuses a node. Drawn with the Line API; each line's Strip is cached on the views'
version keys, so a frame where nothing changed costs a dict lookup.
"""

from __future__ import annotations

from collections import Counter
from math import ceil

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from kvtui.views import MOVING, PINNED, USED
from kvtui.tui.themes import DEFAULT_VARIABLES, OWNER_COLOURS
from kvtui.tui.widgets.block_map import owner_slot

OVERVIEW_FROM = 16
LEVELS = " ▁▂▃▄▅▆▇█"


class OverviewStrip(Widget):
    DEFAULT_CSS = """
    OverviewStrip { height: auto; }
    """

    class Picked(Message):
        def __init__(self, node: str) -> None:
            self.node = node
            super().__init__()

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner
        self.selected: str | None = None
        self._strips: dict[int, tuple[tuple, Strip]] = {}
        self._seen = None

    def cell_w(self, width: int, n: int) -> int:
        """Characters per node: 3 when every node fits on two lines that way, else 2, else 1."""
        for w in (3, 2):
            if ceil(n / max(width // w, 1)) <= 2:
                return w
        return 1

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        n = len(self.runner.view().nodes)
        return max(1, ceil(n / max(width // self.cell_w(width, n), 1)))

    def tick(self) -> None:
        key = (self.runner.generation, self.selected, tuple(n.version for n in self.runner.view().nodes))
        if key != self._seen:
            self._seen = key
            self.refresh()

    def _cell(self, nv, groups: dict[str, int]) -> tuple[str, int | None]:
        if not nv.up:
            return "×", None
        tier = nv.gpu
        n = tier.num_blocks
        busy = tier.used
        level = 0 if n == 0 or busy == 0 else max(1, round(8 * busy / n))
        owners = Counter(o for s, o in zip(tier.state.tolist(), tier.owner) if s in (USED, PINNED, MOVING) and o)
        slot = owner_slot(owners.most_common(1)[0][0], groups) if owners else None
        return LEVELS[level] if level else "·", slot

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        nodes = self.runner.view().nodes
        w = self.cell_w(width, len(nodes))
        per = max(width // w, 1)
        row = nodes[y * per : (y + 1) * per]
        key = (width, self.selected, self.app.theme, tuple(n.version for n in row))
        hit = self._strips.get(y)
        if hit is not None and hit[0] == key:
            return hit[1]
        var = {**DEFAULT_VARIABLES, **getattr(self.app, "theme_variables", {})}
        base = self.rich_style
        groups = {name: i % OWNER_COLOURS for i, name in enumerate(self.runner.group_names)}
        segs = []
        for nv in row:
            glyph, slot = self._cell(nv, groups)
            name = f"block-owner-{slot}" if slot is not None else ("block-down" if glyph == "×" else "block-free")
            colour = Color.parse(var.get(name, DEFAULT_VARIABLES[name])).rich_color
            style = base + Style(color=colour, reverse=nv.name == self.selected, bold=nv.name == self.selected)
            segs.append(Segment((glyph * w)[: w - 1] + (glyph if w == 1 else " "), style))
        strip = Strip(segs).adjust_cell_length(width, base)
        self._strips[y] = (key, strip)
        return strip

    def on_click(self, event: events.Click) -> None:
        nodes = self.runner.view().nodes
        w = self.cell_w(self.size.width, len(nodes))
        i = event.y * max(self.size.width // w, 1) + event.x // w
        if 0 <= i < len(nodes):
            self.post_message(self.Picked(nodes[i].name))
