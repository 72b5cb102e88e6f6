"""What the app shows, as text: the tests that assert on the screen (the Why panel's, the
lessons') read it here."""

from __future__ import annotations

import io

from rich.console import Console


def screen_text(app, region=None) -> str:
    """What the terminal shows (inside `region` when given), as plain text with whitespace
    collapsed: the screen composed as App.export_screenshot does, exported as text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    rows = console.export_text(styles=False).splitlines()
    if region is not None:
        rows = [row[region.x:region.right] for row in rows[region.y:region.bottom]]
    return " ".join(" ".join(rows).split())
