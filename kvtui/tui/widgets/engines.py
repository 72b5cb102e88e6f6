"""The nodes panel: one line per node or engine, what it holds and what it said.

For every run the same columns from the views (kvtui/views.py): GPU blocks held of how many,
offloaded blocks, blocks evicted, the recent hit rate, running and waiting requests; then what
the source adds of its own (`RunSource.node_notes`: a real engine's batches, gaps, malformed
messages, epochs and its last /metrics read), and the router's headline (a live index: keys,
and how many more than one engine holds).
"""

from __future__ import annotations

from textual.widgets import Static

from kvtui.tui.widgets.block_map import fit_name
from kvtui.tui.widgets.in_place import update_in_place


def node_lines(run) -> list[str]:
    """The header and a line per node, columns as wide as their widest entry (a 4-node demo's
    "126/128" needs 7 of the 13 a 131072-block pool takes: at 120 columns the last ones fit)."""
    notes = run.source.node_notes()
    nodes = run.view().nodes
    held = [f"{n.gpu.used + n.gpu.cached_idle}/{n.gpu.num_blocks}" for n in nodes]
    name_w = max([4, *(len(fit_name(n.name, 12)) for n in nodes)])
    held_w = max([8, *map(len, held)])
    lines = [f"{'node':<{name_w}} {'gpu held':>{held_w}} {'cpu+':>5} {'evicted':>7} {'hits':>4} run wait"]
    for n, gpu_held in zip(nodes, held):
        hits = "-" if n.hit_rate is None else f"{100 * n.hit_rate:.0f}%"
        cpu = n.cpu[0] if n.cpu else 0
        line = (f"{fit_name(n.name, 12):<{name_w}} {gpu_held:>{held_w}} {cpu:>5} {n.evicted_total:>7} {hits:>4} "
                f"{len(n.running):>3} {len(n.waiting):>4}" + ("" if n.up else " down"))
        lines.append(line)
        if notes.get(n.name):
            lines.append(f"  {notes[n.name]}")
    headline = run.routing_headline()
    return lines + ([headline] if headline else [])


class EnginesTable(Static):
    DEFAULT_CSS = """
    EnginesTable { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes, markup=False)
        self.runner = runner
        self._shown: tuple | None = None

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): redrawn when the run moved."""
        run = frame.run
        key = (run.generation, run.position, run.now)
        if key != self._shown and self.is_mounted:
            self._shown = key
            update_in_place(self, "\n".join(node_lines(run)))
