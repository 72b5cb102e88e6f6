"""Toasts that fit a small terminal: on a screen under `STACK_FROM` rows a new notification
replaces the ones on show instead of stacking on them.

Textual stacks toasts upward from the footer and cuts the oldest at the top of the screen: at
80x24, three long messages fill it and a fourth runs off (QA). Toasts are also made three
quarters of the width there instead of half (app.tcss, compare.py's CSS), so each takes fewer
rows. Larger screens keep Textual's stack.
"""

from __future__ import annotations

STACK_FROM = 30  # rows from which toasts stack


class FittedToasts:
    """Mixed into an App before `App` itself."""

    def notify(self, message, *args, **kwargs) -> None:
        if self.size.height < STACK_FROM:  # type: ignore[attr-defined]
            self.clear_notifications()  # type: ignore[attr-defined]
        super().notify(message, *args, **kwargs)  # type: ignore[misc]
