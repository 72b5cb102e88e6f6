"""One node in full: its block map with every block its own cell when the screen allows,
and a breakdown of its blocks by owner (prefix group)."""

from __future__ import annotations

from collections import Counter

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from kvtui.tui.widgets.block_map import BlockMap
from kvtui.tui.widgets.legend import Legend
from kvtui.tui.widgets.status_bar import StatusBar


def owner_breakdown(node) -> str:
    pool = node.pool
    used: Counter[str] = Counter()
    cached: Counter[str] = Counter()
    pinned: Counter[str] = Counter()
    for b in range(pool.num_blocks):
        owner = pool.owner[b] or "?"
        if b in pool.pinned:
            pinned[owner] += 1
        elif pool.ref[b] > 0:
            used[owner] += 1
        elif pool.key[b] is not None:
            cached[owner] += 1
    free = pool.num_blocks - sum(used.values()) - sum(cached.values()) - sum(pinned.values())
    names = sorted(set(used) | set(cached) | set(pinned))
    parts = [f"{n}: {used[n]} in use, {pinned[n]} pinned, {cached[n]} cached" for n in names]
    head = f"{node.name}: {pool.num_blocks} blocks, {free} free" + ("" if node.up else " — DOWN")
    return head + ("  │  " + "  │  ".join(parts) if parts else "")


class ZoomScreen(Screen[None]):
    DEFAULT_CSS = """
    ZoomScreen #zoom-map { height: 1fr; max-height: 100%; }
    ZoomScreen #zoom-info { height: auto; max-height: 3; color: $text-muted; }
    """

    BINDINGS = [Binding("escape,z", "app.pop_screen", "Back", priority=True)]

    def __init__(self, runner, node: str):
        super().__init__()
        self.runner = runner
        self.node = node
        self._info = None

    def compose(self) -> ComposeResult:
        yield StatusBar(id="zoom-status")
        yield Legend(self.runner, id="zoom-legend")
        yield Static("", id="zoom-info", markup=False)
        yield BlockMap(self.runner, only=self.node, id="zoom-map")
        yield Footer()

    def on_mount(self) -> None:
        m = self.query_one(BlockMap)
        m.selected = self.node
        self.tick()

    def tick(self) -> None:
        self.query_one(BlockMap).tick()
        node = self.runner.sim.node_by_name.get(self.node)
        if node is None:
            return
        key = (node.pool.version, id(node.pool.ref), node.up)
        if key != self._info:
            self._info = key
            self.query_one("#zoom-info", Static).update(owner_breakdown(node))

    def rebind(self) -> None:
        self.query_one(BlockMap).rebind()
        self._info = None
        self.tick()
