"""Command palette entries (ctrl+p) for every control, including one per node, policy and theme."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class KvtuiCommands(Provider):
    """Everything the keys do, searchable by name."""

    def _commands(self) -> list[tuple[str, str, object]]:
        app = self.app
        maker = getattr(app, "palette_commands", None)
        return list(maker()) if maker is not None else []

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(callback), help=help_text, text=title)
