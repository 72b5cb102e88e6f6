"""The router's decision log: one line per decision (time, request, chosen node, reason).

Moving the cursor onto a line posts `LogList.Highlighted`; the app then shows every candidate
of that decision with its features and score, and explains the pick in words.
"""

from __future__ import annotations

from kvtui.events import RouteDecided
from kvtui.tui.widgets.log_list import LogList


class DecisionLog(LogList):
    DEFAULT_CSS = """
    DecisionLog > .decisionlog--request { text-style: bold; }
    DecisionLog > .decisionlog--node { color: $primary; text-style: bold; }
    DecisionLog > .decisionlog--reject { color: $error; text-style: bold; }
    """
    COMPONENT_CLASSES = LogList.COMPONENT_CLASSES | {
        "decisionlog--request",
        "decisionlog--node",
        "decisionlog--reject",
    }
    empty_text = "no routing decisions yet (space: play, s: step)"

    def tick(self, frame) -> None:
        """The panels' tick (tui/panels.py): the run's new decisions."""
        self.take(frame.run, frame.run.drain_decisions)

    def style_names(self):
        return ("decisionlog--request", "decisionlog--node", "decisionlog--reject")

    def format_item(self, ev: RouteDecided) -> list[tuple[str, str]]:
        node = ev.node if ev.node is not None else "✖ none"
        return [
            (f"{ev.t:8.3f} ", "loglist--time"),
            (f"{ev.request:<8} ", "decisionlog--request"),
            ("→ ", "loglist--dim"),
            (f"{node:<7} ", "decisionlog--node" if ev.node is not None else "decisionlog--reject"),
            (ev.reason, ""),
        ]
