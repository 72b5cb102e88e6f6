"""The header line: scenario, policy, seed, sim time, event number, play state and speed.

Play state is spelled out next to its glyph (▶ playing, ‖ paused, » seeking, ■ ended), so it
reads without colour.
"""

from __future__ import annotations

from textual.widgets import Static


def speed_text(speed: float) -> str:
    return f"×{speed:g}"


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { dock: top; height: 1; background: $panel; color: $foreground; text-style: bold; }
    StatusBar.-playing { background: $success 35%; }
    StatusBar.-seeking { background: $warning 35%; }
    StatusBar.-ended { background: $error 30%; }
    StatusBar.-cp-down { background: $error 55%; }
    """

    def __init__(self, *, id: str | None = None):
        super().__init__("", id=id, markup=False)
        self._text = None

    def show(
        self,
        *,
        scenario: str,
        policy: str,
        seed: int | None,
        now: float,
        seq: int,
        state: str,
        speed: float,
        width: int,
        cp_down: bool = False,
    ) -> None:
        glyph = {"playing": "▶", "paused": "‖", "seeking": "»", "ended": "■"}.get(state.split()[0], "")
        st = f"{glyph} {state} {speed_text(speed)}"
        if cp_down:
            st += " │ ✖ CP recovering"
        # a live or recorded run has no seed, and a policy only when route mode decided
        chosen = [f"policy {policy}"] * bool(policy) + [f"seed {seed}"] * (seed is not None)
        short = [policy] * bool(policy) + [f"seed {seed}"] * (seed is not None)
        text = " │ ".join([f" {scenario}", *chosen, f"t {now:,.3f} s", f"event #{seq:,}", st])
        if len(text) > width:
            text = " │ ".join([f" {scenario}", *short, f"t {now:,.2f}s", f"#{seq:,}", st])
        if len(text) > width:
            text = " ".join([f"{now:,.1f}s", f"#{seq:,}", st])
        if text != self._text:
            self._text = text
            self.update(text, layout=False)  # one fixed line: no layout pass needed
        key = state.split()[0]
        self.set_class(key == "playing", "-playing")
        self.set_class(key == "seeking", "-seeking")
        self.set_class(key == "ended", "-ended")
        self.set_class(cp_down, "-cp-down")
