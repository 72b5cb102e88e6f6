"""Toasts that fit a small terminal: on a screen under `STACK_FROM` rows a new notification
replaces the ones on show instead of stacking on them.

Textual stacks toasts upward from the footer and cuts the oldest at the top of the screen: at
80x24, three long messages fill it and a fourth runs off (QA). Toasts are also made three
quarters of the width there instead of half (app.tcss, compare.py's CSS), so each takes fewer
rows. Larger screens keep Textual's stack, except that a message repeated (a key pressed
again and again) replaces its earlier copy instead of piling up copies down the screen.
"""

from __future__ import annotations

from textual.notifications import Notify

STACK_FROM = 30  # rows from which toasts stack


class FittedToasts:
    """Mixed into an App before `App` itself.

    Works where a toast is shown, not where it is asked for: `notify` only posts a message, so
    the keys already queued would each post theirs before any is on show. Textual calls every
    class's `_on_notify` along the MRO, this one before App's (which adds the toast), so this
    one does not call it again.
    """

    def _on_notify(self, event: Notify) -> None:
        shown = self._notifications  # type: ignore[attr-defined]
        if self.size.height < STACK_FROM:  # type: ignore[attr-defined]
            shown.clear()
            return
        new = event.notification
        for old in [n for n in shown if (n.message, n.title) == (new.message, new.title)]:
            del shown[old]
