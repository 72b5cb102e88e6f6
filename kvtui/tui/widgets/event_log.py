"""The event log: evictions (which blocks, whose prefix), preemptions, rejections with reasons,
node down / up, pinned prefixes, control-plane crash and recovery.

Each line starts with a tag word (EVICT, REJECT, ...) in its own colour, so the kind reads
without colour as well.
"""

from __future__ import annotations

from kvtui.events import Event
from kvtui.run.narrate import summary
from kvtui.tui.widgets.log_list import LogList

TAG_STYLE = {
    "EVICT": "eventlog--evict",
    "REJECT": "eventlog--reject",
    "PREEMPT": "eventlog--preempt",
    "DOWN": "eventlog--down",
    "UP": "eventlog--up",
    "CLEARED": "eventlog--down",
    "PIN": "eventlog--pin",
    "CRASH": "eventlog--down",
    "RECOVERED": "eventlog--up",
    "END": "eventlog--pin",
    "GAP": "eventlog--down",
    "RESTART": "eventlog--down",
    "MALFORMED": "eventlog--reject",
    "MISSES": "eventlog--evict",
}


class EventLog(LogList):
    DEFAULT_CSS = """
    EventLog > .eventlog--evict { color: $warning; text-style: bold; }
    EventLog > .eventlog--reject { color: $error; text-style: bold; }
    EventLog > .eventlog--preempt { color: $accent; text-style: bold; }
    EventLog > .eventlog--down { color: $error; text-style: bold reverse; }
    EventLog > .eventlog--up { color: $success; text-style: bold; }
    EventLog > .eventlog--pin { color: $primary; text-style: bold; }
    """
    COMPONENT_CLASSES = LogList.COMPONENT_CLASSES | set(TAG_STYLE.values())
    empty_text = "no evictions, preemptions, rejections or failures yet"

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): the run's new log lines."""
        self.take(frame.run, frame.run.drain_log)

    def style_names(self):
        return tuple(set(TAG_STYLE.values()))

    def format_item(self, ev: Event) -> list[tuple[str, str]]:
        text = summary(ev)
        tag, _, rest = text.partition(" ")
        style = TAG_STYLE.get(tag)
        pieces = [(f"{ev.t:8.3f} ", "loglist--time")]
        if style is None:
            pieces.append((text, ""))
        else:
            pieces.append((f"{tag:<7}", style))
            pieces.append((" " + rest, ""))
        return pieces
