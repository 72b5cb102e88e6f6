"""The command palette, guarded against two races inside Textual 8's own palette.

Both come from keys that arrive before the palette has settled, which a terminal user makes
by typing fast (or a key-repeat):

- `ctrl+p` then PageDown at once: `OptionList.action_page_down` pages over the option list's
  line cache before the list has been laid out, and raises `KeyError`
  (textual/widgets/_option_list.py `_move_page` in Textual 8.2.8; reported against Textual as
  kagan-sh/kagan-legacy#31 "KeyError crash in action_page OptionsList", and the early return
  of `_update_lines` on a zero-height list is Textualize/textual#5794). Here a key the list
  cannot take yet is dropped: the next one works.
- `ctrl+p Down Enter Enter`: the first Enter dismisses the palette; the second is still in
  its queue and dismisses it again, and `App.pop_screen` raises `ScreenStackError` ("Can't
  pop screen") because the palette is already gone (textual/command.py
  `_select_or_command` -> `Screen.dismiss`). Here a palette dismisses itself once.

These are upstream bugs; when Textual fixes them this subclass can go.
"""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.command import CommandPalette


class GuardedCommandPalette(CommandPalette):
    _gone = False

    def _action_command_list(self, action: str) -> None:
        if self._gone:
            return
        try:
            super()._action_command_list(action)
        except (KeyError, IndexError):
            pass  # the list is not laid out yet (see the module doc)

    def _select_or_command(self, event=None) -> None:
        if self._gone or not self.is_attached or self.app.screen is not self:
            if event is not None:
                event.stop()
            return
        super()._select_or_command(event)

    def _watch__list_visible(self) -> None:
        # Textual's watcher queries the CommandList; after a fast dismiss the gather worker can
        # still flip the flag while the palette's children are being removed (NoMatches in a
        # worker, found by tests/tui/test_tui_fuzz_keys.py at KVTUI_FUZZ_SCALE=28): skip then.
        if self._gone or not self.is_attached:
            return
        try:
            super()._watch__list_visible()
        except NoMatches:
            pass

    def dismiss(self, result=None):
        if self._gone:
            return None
        self._gone = True
        return super().dismiss(result)
