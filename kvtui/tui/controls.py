"""Every control of the app, listed once: the key bindings, the help screen and the command
palette are all built from `CONTROLS`, so they cannot drift apart.

Modelled on harlequin's actions registry (tconbeer/harlequin@0f74713 src/harlequin/actions.py: one `Action` record per
command, holding its keys, its description and the function it runs, from which both the key
map and the palette are made); written afresh here for Textual bindings.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

NEXT = Binding.Group("Next")
SPEED = Binding.Group("Speed", compact=True)
NODE = Binding.Group("Node", compact=True)
TIME = Binding.Group("Step", compact=True)

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)  # sim seconds per wall second
DEFAULT_SPEED = 2.0


@dataclass(frozen=True)
class Control:
    id: str
    keys: str  # Textual key names, comma-separated ("" for palette-only commands)
    action: str  # a Textual action string on the app
    label: str  # short footer label
    title: str  # the palette's name for it
    help: str  # one line for the help screen
    display: str | None = None  # how the key is shown (defaults to the first key)
    show: bool = True  # in the footer
    group: Binding.Group | None = None
    priority: bool = False

    @property
    def key_display(self) -> str:
        if self.display:
            return self.display
        return self.keys.split(",")[0] if self.keys else ""

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.label,
            show=self.show,
            key_display=self.display,
            group=self.group,
            id=self.id,
            priority=self.priority,
        )


C = Control
CONTROLS: tuple[Control, ...] = (
    C("play", "space", "toggle_play", "Play/Pause", "Play / pause", "play / pause"),
    C("step", "s", "step", "Step", "Step one event", "step one event (and explain it)", group=TIME),
    C("back", "b", "back", "Back", "Step back one event", "step back one event (the run is replayed from a checkpoint)", group=TIME),
    C("goto", "g", "goto", "Go to", "Go to a sim time or event number", "go to a sim time (12.5) or an event number (#500)", show=False),
    C("detail", "l", "detail", "Detail", "Toggle detail level", "detail level: fold stored/batch events out of single steps, or show every event", show=False),
    C("next-eviction", "e", "seek('eviction')", "eviction", "Jump to next eviction", "jump to the next eviction", group=NEXT),
    C("next-rejection", "r", "seek('rejection')", "rejection", "Jump to next rejection", "jump to the next rejection", group=NEXT, show=False),
    C("next-preemption", "p", "seek('preemption')", "preemption", "Jump to next preemption", "jump to the next preemption", group=NEXT, show=False),
    C("next-failure", "f", "seek('failure')", "node failure", "Jump to next node failure", "jump to the next node failure", group=NEXT, show=False),
    C("next-recovery", "w", "seek('recovery')", "recovery", "Jump to next control-plane recovery", "jump to the next control-plane recovery (WAL replay)", group=NEXT, show=False),
    C("next-decision", "n", "seek('decision')", "decision", "Jump to next routing decision", "jump to the next routing decision", group=NEXT, show=False),
    C("next-arrival", "a", "seek('arrival')", "arrival", "Jump to next arrival", "jump to the next request arrival", group=NEXT, show=False),
    C("next-completion", "x", "seek('completion')", "completion", "Jump to next completion", "jump to the next request completion", group=NEXT, show=False),
    C("next-transfer", "m", "seek('transfer')", "KV transfer", "Jump to next KV transfer", "jump to the next KV transfer from a prefill node to a decode node", group=NEXT, show=False),
    C("next-gap", "u", "seek('gap')", "lost gap", "Jump to next lost gap", "jump to the next gap of KV events an engine's replay could not fill (live and recorded runs)", group=NEXT, show=False),
    C("next-election", "j", "seek('election')", "election", "Jump to next metadata election", "jump to the next election in the replicated control plane (J: back to the last one)", group=NEXT, show=False),
    C("last-election", "J", "last_election", "last election", "Back to the last metadata election", "back to the start of the last election in the replicated control plane", show=False),
    C("cancel-seek", "escape", "cancel_seek", "Cancel jump", "Cancel the jump", "while a jump searches: cancel it and go back to where it began", show=False, priority=True),
    C("next-chapter", "k", "chapter(1)", "chapter", "Next story chapter", "go to the next chapter of the scenario's story (K: previous)", show=False),
    C("prev-chapter", "K", "chapter(-1)", "chapter", "Previous story chapter", "go to the previous chapter of the story", show=False),
    C("story", "S", "story", "Story", "Read the story's chapter in full", "the story's current chapter in full (the line under the timeline says when it is cut; or click it)", show=False),
    C("faster", "plus,equals_sign", "speed(1)", "Faster", "Faster", "faster (sim seconds per wall second)", display="+", group=SPEED, show=False),
    C("slower", "minus", "speed(-1)", "Slower", "Slower", "slower", display="-", group=SPEED, show=False),
    C("prev-node", "left_square_bracket", "select_node(-1)", "prev node", "Select previous node", "select the previous node (or click its map)", display="[", group=NODE, show=False),
    C("next-node", "right_square_bracket", "select_node(1)", "next node", "Select next node", "select the next node", display="]", group=NODE, show=False),
    C("toggle-node", "d", "toggle_node", "Down/Up", "Take the selected node down / bring it back", "take the selected node down / bring it back", show=False),
    C("zoom", "z", "zoom", "Inspect", "Inspect the selected node's blocks", "inspect the selected node block by block (or double-click it); escape: back"),
    C("why", "y", "why", "Why", "Read the Why in full", "the Why of the event on show, whole, with every candidate's note (the panel says when it is cut)", show=False),
    C("life", "i", "life", "Life", "Show a request's life", "the life of the request of the selected decision / event", show=False),
    C("restart", "R", "restart", "Restart", "Restart (same seed)", "restart the run with the same seed", show=False),
    C("policy", "o", "next_policy", "Policy", "Next routing policy", "switch to the next routing policy (restarts the run)", show=False),
    C("crash", "c", "crash", "Crash CP", "Crash the control plane", "crash the control plane (it recovers from its write-ahead log); a replicated one: kill its leader", show=False),
    C("theme", "t", "next_theme", "Theme", "Next theme", "next theme: kvtui's, then Textual's (its name is shown; the palette lists them all)", show=False),
    C("view", "v", "next_view", "View", "Next view (narrow screens)", "next lower panel on narrow screens", show=False),
    C("help", "question_mark", "help", "Help", "Help", "this help", display="?"),
    C("quit", "q", "quit", "Quit", "Quit", "quit"),
)

EXTRA_HELP = (
    ("↑ ↓ pgup pgdn", "move in the focused log or table (tab: next); escape: follow"),
    ("enter", "on a decision: show its candidates"),
    ("ctrl+p", "command palette: every command by name"),
)


def bindings() -> list[Binding]:
    """Help and quit first, so the footer shows them at any width (it cuts from the right)."""
    first = [c for c in CONTROLS if c.id in ("help", "quit")]
    rest = [c for c in CONTROLS if c.id not in ("help", "quit")]
    return [c.binding() for c in first + rest if c.keys]


MERGED = ("slower", "next-node", "prev-chapter", "last-election")  # shown on the row of their pair


def help_rows() -> list[tuple[str, str]]:
    rows = []
    for c in CONTROLS:
        keys = c.key_display
        if c.id == "faster":
            keys = "+ / -"
        elif c.id in MERGED:
            continue
        elif c.id == "prev-node":
            keys = "[ / ]"
        elif c.id == "next-chapter":
            keys = "k / K"
        elif c.id == "next-election":
            keys = "j / J"
        rows.append((keys, c.help))
    return rows + list(EXTRA_HELP)


def palette() -> list[tuple[str, str, str]]:
    """(title, help, action) for each control."""
    return [(c.title, f"{c.key_display}: {c.help}" if c.key_display else c.help, c.action) for c in CONTROLS]
