"""The block map: every KV block of every node as a cell, drawn with the Line API.

Each node gets a label line (name, used %, cached-idle %, its CPU tier's fill when it has one,
running / waiting, hit rate, DOWN mark) and a grid of cells. A block's *state* is told by its glyph and its *owner* (the prefix
group whose data it holds) by its colour, so the map reads without colour too:

    █ in use      ▓ pinned      ░ cached, idle (evictable)      · free      × node down
    ⇄ in flight: a KV transfer is moving it, drawn on both the prefill and the decode node's map
      (kvtui/sim/view.py; the legend lists it only when some node has a prefill/decode role)

When a node has more blocks than its panel has cells, one cell stands for `k` consecutive
blocks and shows their mix: a cell whose blocks all share one state keeps that state's glyph;
a mixed cell with blocks in use draws a bar ▁▂▃▄▅▆▇ as high as the share in use (on a tinted
background when some of the rest is cached); a mix of cached and free blocks shows ░ when at
least half are cached, else ·; a cell with any block in flight shows ⇄, so a move is never
averaged away. The label says `1:k` when cells are aggregated.

Rendering is cached per node: the cell codes are recomputed only when the pool's version (or
its identity: a node that went down gets a fresh pool), the cell size or the theme change, and
row strips are cached for that key, so a frame where nothing changed costs a dict lookup.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from math import ceil

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.color import Color
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from kvtui.run.journal import HIT_WINDOW
from kvtui.tui.themes import DEFAULT_VARIABLES, OWNER_COLOURS

from kvtui.views import CACHED, FREE, MOVING, PINNED, USED

PAD = 5  # past the views' state codes: the padding of a node's last aggregated cell

GLYPH_FREE = "·"
GLYPH_CACHED = "░"
GLYPH_USED = "█"
GLYPH_PINNED = "▓"
GLYPH_DOWN = "×"
GLYPH_MOVING = "⇄"
BARS = "▁▂▃▄▅▆▇"

# Cell codes: glyph index * 32 + owner slot * 2 + tinted-background flag.
G_FREE, G_CACHED, G_USED, G_PINNED, G_DOWN = 0, 1, 2, 3, 4
G_BAR0 = 5  # 5..11: ▁..▇
G_FREE_OWNED = 12  # mostly free, some cached: a dot in the owner's colour
G_MOVING = 13
GLYPHS = [GLYPH_FREE, GLYPH_CACHED, GLYPH_USED, GLYPH_PINNED, GLYPH_DOWN, *BARS, GLYPH_FREE, GLYPH_MOVING]
STATE_GLYPH = np.array([G_FREE, G_CACHED, G_USED, G_PINNED, G_MOVING], dtype=np.int64)  # by the views' state code

MIN_COLUMN = 22  # narrowest node column worth drawing side by side
GAP = 1
POOL_ORDER = {"prefill": 0, "both": 1, "decode": 2}  # maps grouped by pool: prefill, colocated, decode


def pool_words(node) -> tuple[str, str]:
    """The pool and the KV in flight on a node's label, long and short ("" for a colocated node
    with nothing moving): the label counts the requests whose KV is leaving (⇢) or arriving (⇠),
    waiting for room or on the link; the blocks a started transfer is moving draw ⇄ on both maps."""
    out, arriving = node.moving
    moving = (f" ⇢{out}" if out else "") + (f" ⇠{arriving}" if arriving else "")
    if node.role == "both":
        return moving, moving
    return f" {node.role}{moving}", f" {node.role[0].upper()}{moving}"


def fit_name(name: str, width: int) -> str:
    """`name` in at most `width` cells: cut in the middle with an ellipsis, keeping the end
    (node names usually differ at the end: node-07, node-08)."""
    if len(name) <= width:
        return name
    if width <= 1:
        return name[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


def owner_slot(name: str, known: dict[str, int]) -> int:
    """Colour slot of a prefix group: scenario order first, a stable hash for others."""
    slot = known.get(name)
    if slot is None:
        slot = zlib.crc32(name.encode()) % OWNER_COLOURS
        known[name] = slot
    return slot


@dataclass
class _NodeCells:
    """One node's cells for one (pool version, cell size, theme)."""

    key: tuple
    ref_obj: object  # the pool's ref list: a node that went down gets new lists
    codes: np.ndarray  # one int code per cell
    k: int
    used: int
    cached_idle: int
    rows: dict[int, list[Segment]]


class BlockMap(Widget):
    """Block maps of a cluster's nodes (or of one node, zoomed)."""

    DEFAULT_CSS = """
    BlockMap {
        height: auto;
        min-height: 2;
    }
    """

    COMPONENT_CLASSES = {
        "blockmap--label",
        "blockmap--name",
        "blockmap--selected",
        "blockmap--down",
        "blockmap--dim",
    }

    class CellClicked(Message):
        """A cell of the zoomed node was clicked (the inspector moves its cursor there)."""

        def __init__(self, node: str, cell: int) -> None:
            self.node = node
            self.cell = cell
            super().__init__()

    class NodeClicked(Message):
        def __init__(self, node: str, double: bool) -> None:
            self.node = node
            self.double = double
            super().__init__()

    def __init__(self, runner, only: str | None = None, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.runner = runner
        self.only = only
        self.selected: str | None = None
        self.cursor: int | None = None  # the inspector's cell (zoomed node only)
        self.max_rows: int | None = None  # cap on the auto height (the app sets it per screen size)
        self.groups: dict[str, int] = {}
        self._cells: dict[int, _NodeCells] = {}
        self._styles: dict[int, Style] = {}
        self._style_key: tuple | None = None
        self._grid_cache: tuple | None = None
        self._seen: tuple | None = None
        self._base: Style | None = None
        self._strips: dict[tuple[int, int], tuple[tuple, Strip]] = {}
        self._label_styles: dict[str, Style] = {}
        self._pass_nodes: list | None = None
        self.reset_groups()

    # ------------------------------------------------------------------ data
    def reset_groups(self) -> None:
        self.groups = {name: i % OWNER_COLOURS for i, name in enumerate(self.runner.group_names)}

    def nodes(self) -> list:
        """The engine's read-only node views (kvtui/sim/view.py): this widget never reads a pool.
        Within one drawing pass, the snapshot taken when the pass began (see render_lines)."""
        if self._pass_nodes is not None:
            return self._pass_nodes
        view = self.runner.view()
        if self.only is not None:
            node = view.node(self.only)
            return [node] if node is not None else []
        return sorted(view.nodes, key=lambda n: POOL_ORDER[n.role])  # grouped by pool; stable: cluster order within

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme) -> None:
        self._invalidate_styles()
        self.refresh()

    def _invalidate_styles(self) -> None:
        self._style_key = None
        self._base = None
        self._cells.clear()
        self._strips.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._invalidate_styles()

    def node_key(self, node) -> tuple:
        """What one node's picture (label and cells) depends on."""
        return node.version

    def tick(self) -> None:
        """Redraw only the nodes whose state changed since the last tick."""
        nodes = self.nodes()
        keys = [self.node_key(n) for n in nodes]
        seen = self._seen
        if seen is None or len(seen) != len(keys) or seen[0] != self.runner.generation:
            self._seen = (self.runner.generation, keys)
            self.refresh()
            return
        old = seen[1]
        self._seen = (self.runner.generation, keys)
        changed = [i for i, (a, b) in enumerate(zip(old, keys)) if a != b]
        if not changed:
            return
        if len(changed) * 2 > len(nodes):
            self.refresh()
            return
        self.refresh(*(self.node_region(i) for i in changed))

    def node_region(self, i: int) -> Region:
        width, height = self.size
        c, col_w, node_h = self.layout(width, height)
        row, col = divmod(i, c)
        return Region(col * (col_w + GAP), row * node_h, col_w, node_h)

    def set_selected(self, name: str | None) -> None:
        """Redraw only the nodes whose label shows the mark: the one left and the one chosen
        (a row's cached strips know which of its labels were selected, see render_line)."""
        if name == self.selected:
            return
        old, self.selected = self.selected, name
        regions = self._node_regions({n for n in (old, name) if n is not None})
        if regions:
            self.refresh(*regions)
        else:
            self.refresh()

    def _node_regions(self, names: set[str]) -> list[Region]:
        """The regions of these nodes, or [] (the whole map) when one is not on it."""
        shown = [n.name for n in self.nodes()]
        if not names <= set(shown):
            return []
        return [self.node_region(shown.index(name)) for name in names]

    def rebind(self) -> None:
        """The runner restarted: drop everything cached about the old simulation."""
        self._cells.clear()
        self._strips.clear()
        self._seen = None
        self._grid_cache = None
        self.reset_groups()
        self.refresh(layout=True)

    # ------------------------------------------------------------------ layout
    def _sizes(self) -> list[int]:
        return [n.num_blocks for n in self.nodes()]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The height at which every block gets its own cell, two characters wide (a square
        on most terminals) when that fits under `max_rows`, else one; CSS max-height may cap it."""
        sizes = self._sizes()
        n = len(sizes)
        if not n:
            return 1

        def min_height(cw: int) -> int:
            best = None
            for c in range(1, n + 1):
                col_w = (width - (c - 1) * GAP) // c
                if c > 1 and col_w < MIN_COLUMN:
                    break
                per_row = max(col_w // cw, 1)
                h = ceil(n / c) * (1 + max(ceil(b / per_row) for b in sizes))
                best = h if best is None else min(best, h)
            return best or 1

        best = min_height(1)
        if self.only is None:
            square = min_height(2)
            if self.max_rows is None or square <= self.max_rows:
                best = square
        best = best or 1
        if self.max_rows is not None and best > self.max_rows:
            c, _col_w, node_h = self.layout(width, self.max_rows)
            rows = ceil(n / c)
            best = min(self.max_rows, rows if node_h == 1 else rows * node_h)
        return max(best, 1)

    def cell_width(self, width: int, height: int) -> int:
        """Characters per cell in the current layout (2 when every block fits at that size)."""
        self.layout(width, height)
        return self._grid_cache[2]

    def layout(self, width: int, height: int) -> tuple[int, int, int]:
        """(columns, column width, lines per node) for this size, fewest blocks per cell."""
        key = (width, height, tuple(self._sizes()))
        if self._grid_cache is not None and self._grid_cache[0] == key:
            return self._grid_cache[1]
        sizes = key[2]
        n = len(sizes)
        best = None
        for c in range(1, max(n, 1) + 1):
            col_w = (width - (c - 1) * GAP) // c
            if c > 1 and col_w < MIN_COLUMN:
                break
            col_w = max(col_w, 1)
            r = ceil(n / c) if n else 1
            node_h = height // r
            if node_h < 2:
                continue
            for cw in (1, 2):
                cells = max(col_w // cw, 1) * (node_h - 1)
                k = max((ceil(b / cells) for b in sizes), default=1)
                if cw > 1 and k > 1:
                    continue
                score = (k, -cw, c)
                if best is None or score < best[0]:
                    best = (score, (c, col_w, node_h), cw)
        if best is None:
            # Too short for a label line plus a row of cells per node: one line per node, its
            # name then its cells ("inline"), in as few columns as fit the height.
            c = 1
            while c < n and ceil(n / c) > height and (width - c * GAP) // (c + 1) >= MIN_COLUMN:
                c += 1
            out, cw = (c, max((width - (c - 1) * GAP) // c, 1), 1), 1
        else:
            out, cw = best[1], best[2]
        self._grid_cache = (key, out, cw)
        return out

    def node_at(self, x: int, y: int) -> str | None:
        nodes = self.nodes()
        c, col_w, node_h = self.layout(self.size.width, self.size.height)
        col = x // (col_w + GAP)
        if col >= c or x - col * (col_w + GAP) >= col_w:
            return None
        i = (y // node_h) * c + col
        return nodes[i].name if 0 <= i < len(nodes) else None

    # ------------------------------------------------------------------ styles
    def _ensure_styles(self) -> Style:
        """The widget's base style and the cell styles, computed once per theme / CSS change
        (`rich_style` is too slow to ask for on every line)."""
        if self._base is not None and self._style_key == self.app.theme:
            return self._base
        base = self.rich_style
        self._base = base
        self._style_key = self.app.theme
        self._cells.clear()
        self._strips.clear()
        var = {**DEFAULT_VARIABLES, **getattr(self.app, "theme_variables", {})}

        def colour(name: str):
            try:
                return Color.parse(var.get(name, DEFAULT_VARIABLES[name])).rich_color
            except Exception:
                return Color.parse(DEFAULT_VARIABLES[name]).rich_color

        owners = [colour(f"block-owner-{i}") for i in range(OWNER_COLOURS)]
        free = colour("block-free")
        down = colour("block-down")
        mixed_bg = colour("block-mixed-bg")
        styles: dict[int, Style] = {}
        for g in range(len(GLYPHS)):
            for slot in range(OWNER_COLOURS):
                for tint in (0, 1):
                    code = g * 32 + slot * 2 + tint
                    if g == G_FREE:
                        st = Style(color=free)
                    elif g == G_DOWN:
                        st = Style(color=down)
                    else:
                        st = Style(color=owners[slot])
                    if tint:
                        st = st + Style(bgcolor=mixed_bg)
                    styles[code] = base + st
        self._styles = styles
        self._label_styles = {
            "label": base + self.get_component_rich_style("blockmap--label"),
            "name": base + self.get_component_rich_style("blockmap--name"),
            "selected": base + self.get_component_rich_style("blockmap--selected"),
            "down": base + self.get_component_rich_style("blockmap--down"),
            "dim": base + self.get_component_rich_style("blockmap--dim"),
        }
        return base

    # ------------------------------------------------------------------ cells
    def _node_cells(self, i: int, node, cells_avail: int, col_w: int) -> _NodeCells:
        tier = node.gpu
        n = tier.num_blocks
        k = max(1, ceil(n / max(cells_avail, 1)))
        key = (node.version, k, col_w, cells_avail)
        cached = self._cells.get(i)
        if cached is not None and cached.key == key:
            return cached
        state = tier.state
        # A node holds a few groups across thousands of blocks: slot each distinct name once,
        # then map the blocks with a C-level lookup (a generator per block cost ~1 ms a node).
        slot_of = {o: owner_slot(o, self.groups) for o in set(tier.owner)}
        owner = np.fromiter(map(slot_of.__getitem__, tier.owner), dtype=np.int64, count=n)
        used = tier.used
        cached_idle = tier.cached_idle
        if not node.up:
            m = ceil(n / k)
            codes = np.full(m, G_DOWN * 32, dtype=np.int64)
        elif k == 1:
            glyph = STATE_GLYPH[state]
            codes = glyph * 32 + np.where(state == FREE, 0, owner * 2)
        else:
            codes = self._aggregate(state, owner, n, k)
        nc = _NodeCells(key, None, codes, k, used, cached_idle, {})
        self._cells[i] = nc
        return nc

    @staticmethod
    def _aggregate(state: np.ndarray, owner: np.ndarray, n: int, k: int) -> np.ndarray:
        m = ceil(n / k)
        pad = m * k - n
        if pad:
            state = np.concatenate([state, np.full(pad, PAD, dtype=np.int8)])
            owner = np.concatenate([owner, np.zeros(pad, dtype=np.int64)])
        S = state.reshape(m, k)
        owners = owner.reshape(m, k)
        free = np.count_nonzero(S == FREE, axis=1)
        cached = np.count_nonzero(S == CACHED, axis=1)
        used = np.count_nonzero(S == USED, axis=1)
        pinned = np.count_nonzero(S == PINNED, axis=1)
        moving = np.count_nonzero(S == MOVING, axis=1)
        total = free + cached + used + pinned + moving
        busy = used + pinned + moving
        # majority owner: blocks in use weigh 2, cached ones 1, free ones 0
        weight = np.where(S >= USED, 2, np.where(S == CACHED, 1, 0))
        weight = np.where(S == PAD, 0, weight)
        idx = (np.arange(m)[:, None] * OWNER_COLOURS + owners).ravel()
        tally = np.bincount(idx, weights=weight.ravel(), minlength=m * OWNER_COLOURS).reshape(m, OWNER_COLOURS)
        slot = tally.argmax(axis=1).astype(np.int64)

        glyph = np.full(m, G_FREE, dtype=np.int64)
        glyph = np.where(cached == total, G_CACHED, glyph)
        glyph = np.where(used == total, G_USED, glyph)
        glyph = np.where(pinned == total, G_PINNED, glyph)
        uniform = (free == total) | (cached == total) | (used == total) | (pinned == total)
        share = np.where(total > 0, busy / np.maximum(total, 1), 0.0)
        level = np.clip(np.rint(share * 8).astype(np.int64), 1, 7)
        mixed_busy = (~uniform) & (busy > 0)
        glyph = np.where(mixed_busy, G_BAR0 + level - 1, glyph)
        mixed_idle = (~uniform) & (busy == 0)
        glyph = np.where(mixed_idle & (cached * 2 >= total), G_CACHED, glyph)
        glyph = np.where(mixed_idle & (cached * 2 < total), G_FREE_OWNED, glyph)
        glyph = np.where(moving > 0, G_MOVING, glyph)
        tint = (mixed_busy & (cached > 0) & (moving == 0)).astype(np.int64)
        slot = np.where(glyph == G_FREE, 0, slot)
        return glyph * 32 + slot * 2 + tint

    def _row_segments(self, nc: _NodeCells, row: int, col_w: int, cw: int = 1) -> list[Segment]:
        segs = nc.rows.get(row)
        if segs is not None:
            return segs
        per_row = max(col_w // cw, 1)
        codes = nc.codes[row * per_row : (row + 1) * per_row]
        segs = []
        if len(codes):
            styles = self._styles
            cuts = np.flatnonzero(np.diff(codes)) + 1
            start = 0
            for end in [*cuts.tolist(), len(codes)]:
                code = int(codes[start])
                segs.append(Segment(GLYPHS[code >> 5] * ((end - start) * cw), styles[code]))
                start = end
        nc.rows[row] = segs
        return segs

    def _with_cursor(self, segs: list[Segment], nc: _NodeCells, row: int, col_w: int, cw: int = 1) -> list[Segment]:
        """The row with the inspector's cell drawn in reverse (only when it is in this row)."""
        per_row = max(col_w // cw, 1)
        first = row * per_row
        cur = self.cursor
        if cur is None or not first <= cur < first + per_row or cur >= len(nc.codes):
            return segs
        x = (cur - first) * cw
        out: list[Segment] = []
        pos = 0
        for seg in segs:
            n = len(seg.text)
            if pos <= x < pos + n:
                a, b = x - pos, min(n, x - pos + cw)
                if a:
                    out.append(Segment(seg.text[:a], seg.style))
                out.append(Segment(seg.text[a:b], (seg.style or Style()) + Style(reverse=True, bold=True)))
                if b < n:
                    out.append(Segment(seg.text[b:], seg.style))
            else:
                out.append(seg)
            pos += n
        return out

    def cell_scale(self) -> tuple[int, int]:
        """(blocks per cell, cells per row) of the zoomed node as last laid out."""
        nodes = self.nodes()
        if not nodes:
            return 1, 1
        width, height = self.size
        c, col_w, node_h = self.layout(width, height)
        per_row = max(col_w // self.cell_width(width, height), 1)
        nc = self._cells.get(0)
        k = nc.k if nc is not None else max(1, ceil(nodes[0].num_blocks / max(1, per_row * max(node_h - 1, 1))))
        return k, per_row

    # ------------------------------------------------------------------ labels
    def _label(self, node, nc: _NodeCells, width: int) -> list[Segment]:
        """The node's label line, shortened by rule so it always fits its column with one
        blank cell to spare (labels of neighbouring columns never touch): the longest of the
        tail variants that fits, then a name cut with an ellipsis."""
        st = self._label_styles
        selected = node.name == self.selected
        name_style = st["selected"] if selected else st["name"]
        mark = "▸" if selected else " "
        room = max(0, width - 1)  # the spare cell
        if not node.up:
            options = [" ✖ DOWN (cache lost)", " ✖ DOWN", " ✖", ""]
            tail_style = st["down"]
        else:
            n = node.num_blocks
            u = round(100 * nc.used / n) if n else 0
            c = round(100 * nc.cached_idle / n) if n else 0
            h = node.hit_rate
            hs = "-" if h is None else f"{round(100 * h)}%"
            r, w, d = len(node.running), len(node.waiting), node.completed
            scale = f" 1:{nc.k}" if nc.k > 1 else ""
            tier = f" cpu {round(100 * node.cpu[0] / node.cpu[1])}%" if node.cpu is not None else ""
            pool, short = pool_words(node)
            options = [
                f"{pool} used {u}% cached {c}%{tier} run {r} wait {w} done {d} hit(last {HIT_WINDOW}) {hs}{scale}",
                f"{short} u{u}% c{c}%{tier} r{r} w{w} d{d} h{hs}{scale}",
                f"{short} u{u}% c{c}%{tier} r{r} w{w} d{d}",
                f"{short} u{u}% c{c}%{tier} r{r} w{w}",
                f"{short} u{u}% c{c}% r{r} w{w}",
                f"{short} u{u}% c{c}%",
                f" {u}%",
                "",
            ]
            tail_style = st["label"]
        name = fit_name(node.name, max(1, min(len(node.name), room - 1 - 4)))
        tail = next((o for o in options if 1 + len(name) + len(o) <= room), "")
        if not tail:
            name = fit_name(node.name, max(0, room - 1))
        return [
            Segment((mark + name)[:room], name_style),
            Segment(tail, tail_style),
        ]

    def _name_width(self) -> int:
        return max((len(n.name) for n in self.nodes()), default=4) + 2

    def _inline(self, node, nc: _NodeCells, col_w: int, cells_w: int) -> list[Segment]:
        """One line for a node: ▸name, its cells, used %."""
        st = self._label_styles
        name_w = self._name_width()
        selected = node.name == self.selected
        name_style = st["selected"] if selected else st["name"]
        head = (("▸" if selected else " ") + fit_name(node.name, name_w - 2)).ljust(name_w)[:name_w]
        segs = [Segment(head, name_style)]
        segs.extend(self._row_segments(nc, 0, cells_w))
        n = node.num_blocks
        tail = " DOWN" if not node.up else f" {round(100 * nc.used / n) if n else 0:>3}%"
        segs.append(Segment(tail[: max(0, col_w - name_w - cells_w)], st["down"] if not node.up else st["label"]))
        return segs

    # ------------------------------------------------------------------ the Line API
    def render_lines(self, crop: Region) -> list[Strip]:
        """Every line of one pass drawn from one snapshot of the node views.

        The cluster view is rebuilt on each `runner.view()` (~0.14 ms at 64 nodes), and each
        line asked for it three times (the nodes, the layout's sizes, the cell width): ~0.4 ms
        a line, most of a map's redraw. Nothing advances the run while Textual draws, so one
        snapshot per pass shows exactly what a fresh view per line showed."""
        self._pass_nodes = self.nodes()
        try:
            return super().render_lines(crop)
        finally:
            self._pass_nodes = None

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        base = self._ensure_styles()
        nodes = self.nodes()
        if not nodes or width <= 0:
            return Strip.blank(width, base)
        c, col_w, node_h = self.layout(width, height)
        cw = self.cell_width(width, height)
        grid_row, line = divmod(y, node_h)
        first = grid_row * c
        row_nodes = nodes[first : first + c]
        labelled = line == 0 or node_h == 1  # the lines that draw the selection mark
        marks = tuple(n.name == self.selected for n in row_nodes) if labelled else None
        key = (width, c, col_w, node_h, self.cursor, marks, tuple(self.node_key(n) for n in row_nodes))
        hit = self._strips.get((grid_row, line))
        if hit is not None and hit[0] == key:
            return hit[1]
        segments: list[Segment] = []
        used = 0
        for col, node in enumerate(row_nodes):
            i = first + col
            if col:
                segments.append(Segment(" " * GAP, base))
                used += GAP
            idx = i if self.only is None else 0
            if node_h == 1:
                cells_w = max(1, col_w - self._name_width() - 5)
                nc = self._node_cells(idx, node, cells_w, cells_w)
                segs = self._inline(node, nc, col_w, cells_w)
            else:
                nc = self._node_cells(idx, node, max(col_w // cw, 1) * max(node_h - 1, 1), col_w)
            if node_h == 1:
                pass
            elif line == 0:
                segs = self._label(node, nc, col_w)
            else:
                segs = self._row_segments(nc, line - 1, col_w, cw)
                if self.cursor is not None and self.only is not None:
                    segs = self._with_cursor(segs, nc, line - 1, col_w, cw)
            length = sum(len(s.text) for s in segs)
            segments.extend(segs)
            if length < col_w:
                segments.append(Segment(" " * (col_w - length), base))
            used += col_w
        if used < width:
            segments.append(Segment(" " * (width - used), base))
        strip = Strip(segments, width)
        self._strips[(grid_row, line)] = (key, strip)
        return strip

    # ------------------------------------------------------------------ mouse
    def on_click(self, event: events.Click) -> None:
        if self.only is not None and self.cursor is not None:
            width, height = self.size
            c, col_w, node_h = self.layout(width, height)
            cw = self.cell_width(width, height)
            if node_h > 1 and event.y >= 1 and event.x < col_w:
                self.post_message(self.CellClicked(self.only, (event.y - 1) * max(col_w // cw, 1) + event.x // cw))
                return
        name = self.node_at(event.x, event.y)
        if name is not None:
            self.post_message(self.NodeClicked(name, event.chain >= 2))
