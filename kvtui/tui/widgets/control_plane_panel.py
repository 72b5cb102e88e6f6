"""The replicated control plane: who leads which term, a row per member (role, term, last log
index, commit and applied index, lag, when it last heard a leader) and the last election.

Shown only when the scenario's metadata store is a Raft group (`metadata.replication.members`
> 1): the rows are what etcd's `endpoint status` prints per member (raft term, raft index,
raft applied index), plus the lag a serializable read on that member would see
(kvtui/run/control_plane_view.py). `c` kills the leader; `j` jumps to the next election and `J`
back to the last one.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kvtui.run.control_plane_view import ControlPlaneView, MemberRow
from kvtui.tui.widgets.in_place import update_in_place

COLUMNS = f"{'':<4}{'role':<10}{'term':>4}{'last':>7}{'commit':>7}{'applied':>8}{'lag':>5}{'heard':>7}"
ROLE_STYLES = {"leader": "bold", "down": "red", "candidate": "yellow", "pre-cand.": "yellow"}


def _heard(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.2f}s" if s < 10 else f"{s:.0f}s"


def member_line(r: MemberRow) -> Text:
    role = "pre-cand." if r.role == "pre-candidate" else r.role
    name = r.name + ("*" if r.cut else "")
    line = Text(f"{name:<4}")
    line.append(f"{role:<10}", ROLE_STYLES.get(role, ""))
    line.append(f"{r.term:>4}{r.last_index:>7}{r.commit:>7}{r.applied:>8}")
    line.append(f"{r.lag:>5}", "yellow" if r.lag else "")
    line.append(f"{_heard(r.heard_s):>7}")
    return line


def election_line(view: ControlPlaneView) -> str:
    ev = view.last_election
    if ev is None:
        return "no election yet: m1 has led term 1 from the start (j: next election)"
    return (f"last election #{ev.seq} at {ev.t:.2f} s: {ev.member} waited {ev.timeout_s:.2f} s "
            f"(of [{ev.lo_s:g}, {ev.hi_s:g}]), term {ev.term} (J: go there, j: next)")


def panel_text(view: ControlPlaneView, compact: bool = False) -> Text:
    """`compact` (a narrow screen, where the panel has five rows at 80x24): the last election
    shortened onto the headline's line."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(view.headline, "bold")
    ev = view.last_election
    if compact:
        text.append(f" · last election #{ev.seq} at {ev.t:.2f} s (J)\n" if ev else " · no election yet\n")
    else:
        text.append("\n" + election_line(view) + "\n")
    text.append(COLUMNS, "dim")
    for r in view.rows:
        text.append("\n")
        text.append_text(member_line(r))
    if any(r.cut for r in view.rows):
        text.append("\n* cut off from the others (a partition)", "dim")
    return text


class ControlPlanePanel(Static):
    DEFAULT_CSS = """
    ControlPlanePanel { height: auto; padding: 0 0 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, runner, *, id: str | None = None, classes: str | None = None):
        super().__init__("", id=id, classes=classes)
        self.runner = runner
        self._shown: Text | None = None

    def tick(self, frame=None) -> None:
        view = self.runner.control_plane_view()
        if view is None:
            return
        text = panel_text(view, compact=self.app.has_class("-narrow"))
        if self._shown is None or text.plain != self._shown.plain:
            self._shown = text
            update_in_place(self, text)
