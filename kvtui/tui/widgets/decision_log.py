"""The router's decision log: one line per decision (time, request, chosen node, its score, reason).

The pick and its score come before the policy's reason, so a narrow panel cuts the reason
(with "…") and never what was chosen or how it scored; the reason's own leading "node-c: " is
dropped, the arrow column already names the node. Moving the cursor onto a line posts
`LogList.Highlighted`; the app then shows every candidate of that decision with its features
and score (whose heading names the policy), and explains the pick in words.
"""

from __future__ import annotations

from kvtui.events import RouteDecided
from kvtui.tui.widgets.candidates import pick_score
from kvtui.tui.widgets.log_list import LogList


def short_reason(ev: RouteDecided) -> str:
    """The reason without the node it starts by naming (the line's arrow column shows it)."""
    lead = f"{ev.node}: "
    return ev.reason[len(lead):] if ev.node is not None and ev.reason.startswith(lead) else ev.reason


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
        """The panels' tick (tui/panels.py): the run's new decisions, under a heading naming the
        policy whose score and reason the lines give (over the time and request columns, which
        read without one: at 120 columns the panel has no room for both)."""
        policy = frame.run.policy or (frame.decision.policy if frame.decision else "")  # a recording's: its decisions'
        heading = f"{policy or 'policy':<17} → {'node':<7} {'score':>6}  why"
        if heading != self.heading:
            self.heading = heading
            self._resize()
            self.refresh()
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
            (f"{pick_score(ev):>6}  ", "decisionlog--node" if ev.node is not None else "loglist--dim"),
            (short_reason(ev), ""),
        ]
