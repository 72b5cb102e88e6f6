"""The block inspector (z): one node's blocks in full, a cursor to move over them with the
arrow keys or the mouse, and everything known about the block under it: its state, owner
group, the request and session that stored it, its key and parent key, reference count,
position in the LRU free queue and memory tier. Enter opens the life of the request holding
(or having stored) the block.

Everything shown comes from the engine's views (`Drive.view()`, `Drive.block()`); `[` `]`
change the node *shown* and `d` acts on it, so there is no hidden selection.
"""

from __future__ import annotations

from collections import Counter

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from kvtui.views import STATE_NAMES
from kvtui.tui.widgets.block_map import BlockMap
from kvtui.tui.widgets.legend import Legend
from kvtui.tui.widgets.status_bar import StatusBar


def owner_breakdown(nv) -> str:
    """One line: the node's blocks by state and owner group (from a NodeView)."""
    tier = nv.gpu
    counts: dict[str, Counter[str]] = {name: Counter() for name in STATE_NAMES}
    for state, owner in zip(tier.state.tolist(), tier.owner):
        counts[STATE_NAMES[state]][owner or "?"] += 1
    free = sum(counts["free"].values())
    names = sorted(set(counts["used"]) | set(counts["cached"]) | set(counts["pinned"]) | set(counts["moving"]))
    parts = [
        f"{n}: {counts['used'][n] + counts['moving'][n]} in use{_moving(counts['moving'][n])}, "
        f"{counts['pinned'][n]} pinned, {counts['cached'][n]} cached"
        for n in names
    ]
    head = f"{nv.name}: {tier.num_blocks} blocks, {free} free" + ("" if nv.up else " — DOWN")
    head += f"; running {len(nv.running)}, waiting {len(nv.waiting)}"
    return head + ("  │  " + "  │  ".join(parts) if parts else "")


def _moving(n: int) -> str:
    """A group's blocks in flight, inside its in-use count ("" when none: colocated runs read as before)."""
    return f" ({n} in flight)" if n else ""


# Why a block outside the free queue cannot be evicted. Block 0 read "not evictable (held)"
# beside "ref count 0" and "held by nobody": it is vLLM's null block, reserved, never allocated.
NOT_EVICTABLE = {
    "null": "vLLM's null block, never allocated",
    "pinned": "pinned system prompt",
    "moving": "in flight",
}


def block_text(b, k: int = 1) -> str:
    """The inspector's panel for one BlockView (k > 1: the cell stands for k blocks)."""
    if b is None:
        return "No block here."
    span = f" (this cell: blocks {b.index}..{b.index + k - 1}; the first is shown)" if k > 1 else ""
    key = "-" if b.key is None else f"{b.key & 0xFFFFFFFFFFFF:012x}"
    parent = "-" if b.parent is None else f"{b.parent & 0xFFFFFFFFFFFF:012x}"
    lru = {
        "cached": f"{b.lru} (0 is evicted next)" if b.lru is not None else "-",
        "free": f"{b.lru} in the free queue (empty)" if b.lru is not None else "-",
    }.get(b.state, f"not evictable ({NOT_EVICTABLE.get(b.state, 'held')})")
    lines = [
        f"block {b.index} on {b.node}{span}",
        f"state {b.state}   tier {b.tier}   ref count {b.ref}   LRU position {lru}",
        f"owner group {b.group or '-'}   stored by {b.stored_by or '-'}   session {b.session or '-'}",
        f"key {key}   parent {parent}",
        f"held by {', '.join(b.holders) if b.holders else 'nobody'}",
    ]
    if b.transfer:
        lines.append(b.transfer)
    return "\n".join(lines)


class ZoomScreen(Screen[None]):
    DEFAULT_CSS = """
    ZoomScreen #zoom-map { height: 1fr; max-height: 100%; }
    ZoomScreen #zoom-info { height: auto; max-height: 3; color: $text-muted; }
    ZoomScreen #zoom-block { height: auto; max-height: 6; background: $boost; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape,z", "app.pop_screen", "Back", priority=True),
        Binding("left", "move(-1, 0)", "←", show=False),
        Binding("right", "move(1, 0)", "→", show=False),
        Binding("up", "move(0, -1)", "↑", show=False),
        Binding("down", "move(0, 1)", "↓", show=False),
        Binding("enter", "life", "Request life"),
        Binding("left_square_bracket", "other_node(-1)", "prev node", key_display="[", show=False),
        Binding("right_square_bracket", "other_node(1)", "next node", key_display="]", show=False),
        Binding("d", "toggle_shown", "Down/Up", show=False),
    ]

    def __init__(self, runner, node: str):
        super().__init__()
        self.runner = runner
        self.node = node
        self.cell = 0
        self._info = None
        # Held, not queried: Textual dispatches a pushed screen's bindings, and the app ticks
        # and restarts it, before compose's widgets are mounted (and while they are removed at
        # dismiss). Every entry point checks `ready` instead of querying (the
        # 20,000-key campaigns found NoMatches at each query in turn: `]`, then `R` after `z`).
        self.block_map = BlockMap(runner, only=node, id="zoom-map")
        self.info_line = Static("", id="zoom-info", markup=False)
        self.block_panel = Static("", id="zoom-block", markup=False)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="zoom-status")
        yield Legend(self.runner, id="zoom-legend")
        yield self.info_line
        yield self.block_map
        yield self.block_panel
        yield Footer()

    @property
    def ready(self) -> bool:
        """The block map is mounted (and not removed): the screen can draw and act."""
        m = self.block_map
        return m.is_mounted and m.is_attached

    def on_mount(self) -> None:
        m = self.block_map
        m.selected = self.node
        m.cursor = self.cell
        self.refresh_bindings()
        self.tick()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Every action but Back needs the block map mounted (see __init__): a key that comes
        before it is ignored."""
        if action == "app.pop_screen" or action == "pop_screen":
            return True
        return self.ready

    def tick(self) -> None:
        """Redraw from the engine's views (nothing before the map is mounted)."""
        if not self.ready:
            return
        self.block_map.tick()
        nv = self.runner.view().node(self.node)
        if nv is None:
            return
        if nv.version != self._info:
            self._info = nv.version
            self.info_line.update(owner_breakdown(nv))
        self._show_block()

    def _show_block(self) -> None:
        k, _ = self.block_map.cell_scale()
        b = self.runner.block(self.node, self.cell * k)
        self.block_panel.update(block_text(b, k))

    def rebind(self) -> None:
        if not self.ready:
            return
        self.block_map.rebind()
        self._info = None
        self.tick()

    # ------------------------------------------------------------------ the cursor
    def _cells(self) -> int:
        nv = self.runner.view().node(self.node)
        k, _ = self.block_map.cell_scale()
        return -(-nv.num_blocks // k) if nv is not None else 1

    def set_cell(self, cell: int) -> None:
        self.cell = max(0, min(self._cells() - 1, cell))
        m = self.block_map
        m.cursor = self.cell
        m.refresh()
        self._show_block()

    def action_move(self, dx: int, dy: int) -> None:
        _, per_row = self.block_map.cell_scale()
        self.set_cell(self.cell + dx + dy * per_row)

    def on_block_map_cell_clicked(self, message: BlockMap.CellClicked) -> None:
        message.stop()
        self.set_cell(message.cell)

    def on_block_map_node_clicked(self, message: BlockMap.NodeClicked) -> None:
        message.stop()  # the main screen's double-click-to-zoom does not apply here

    def action_life(self) -> None:
        k, _ = self.block_map.cell_scale()
        b = self.runner.block(self.node, self.cell * k)
        req = None
        if b is not None:
            req = b.holders[0] if b.holders else b.stored_by
        if req is None or req.startswith("pin:"):
            self.app.notify("No request holds or stored this block.", title="Inspector")
            return
        self.app.open_life(req)

    # ------------------------------------------------------------------ the node shown
    def show_node(self, name: str) -> None:
        self.node = name
        self.cell = 0
        self._info = None
        m = self.block_map
        m.only = name
        m.selected = name
        m.cursor = 0
        if self.ready:
            m.rebind()
        select = getattr(self.app, "_select", None)
        if select is not None:
            select(name)  # the main screen's selection follows what is shown
        self.tick()

    def action_other_node(self, delta: int) -> None:
        name = self.runner.neighbour(self.node, delta)
        if name is not None:
            self.show_node(name)

    def action_toggle_shown(self) -> None:
        self.app.toggle_node(self.node)
