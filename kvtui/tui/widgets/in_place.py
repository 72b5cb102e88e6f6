"""`update_in_place`: replace a Static's content without a layout pass when its size stays.

`Static.update` asks for a layout of the whole screen on every call (its size may change).
While playing, the candidate table and the stats line change text several times a second
and almost never their size; each layout then re-arranged and redrew every panel (~35 ms a
pass at 200x60 on big-cluster, much of a key press's wait). The size compared is the one
Textual's layout computes from the content (`Visual.get_height` at the content width, and
`Visual.get_optimal_width` when the width is auto), so a layout is asked for whenever it
could move something.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

UNBOUNDED = 1 << 20  # a container width no content reaches: the natural width, never a cap


def _needed_size(widget: Static, width: int, auto_width: bool) -> tuple[int | None, int]:
    """(natural width if the width is auto, lines needed at `width`): what layout reads.
    The natural width is measured uncapped, so any change a cap could hide still counts."""
    visual = widget._render()
    styles: Any = widget.styles  # Textual's own callers pass RenderStyles where Visual's hints say RulesMap
    natural = visual.get_optimal_width(styles, UNBOUNDED) if auto_width else None
    return natural, visual.get_height(styles, width)


def update_in_place(widget: Static, content) -> None:
    """`widget.update(content)`, laying the screen out again only when the size its content
    needs changed (or when it has not been laid out yet)."""
    width = widget.content_region.width
    if width <= 0 or not widget.is_mounted:
        widget.update(content)
        return
    auto_width = widget.styles.width is not None and widget.styles.width.is_auto
    before = _needed_size(widget, width, auto_width)
    widget.update(content, layout=False)
    if _needed_size(widget, width, auto_width) != before:
        widget.refresh(layout=True)
