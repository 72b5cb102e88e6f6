"""Theme files: the shipped ones (the checkout's top-level themes/*.toml, as scenarios/ is: the
package's `kvtui/themes` links to it and a wheel carries them as package data), then the user's
own, loaded and registered with the app at start.

The user's directory is $KVTUI_THEMES if set, else $XDG_CONFIG_HOME/kvtui/themes (by default
~/.config/kvtui/themes). A user theme with the name of a shipped one replaces it.

A theme file holds Textual's theme fields (name, dark, primary, background, ...) and a
`[variables]` table. The block map, the legend and the histograms take their colours from
these variables (`block-owner-0..7`, `block-free`, `block-down`, `block-mixed-bg`,
`histogram-bar`, `histogram-mark`), so switching the theme recolours them live.
`DEFAULT_VARIABLES` fills in any a theme leaves out (and serves Textual's built-in themes).

A broken user theme (not UTF-8, not TOML, a wrong field, a value that is no colour -- stray
CSS in a variable would otherwise reach the stylesheet and fail the app later) is skipped
with a message naming its file; the other themes still load (issue 20).
"""

from __future__ import annotations

import os
import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Callable

from textual.color import Color, ColorParseError
from textual.theme import Theme

from kvtui.errors import InputError

OWNER_COLOURS = 8

DEFAULT_VARIABLES: dict[str, str] = {
    "block-owner-0": "#5FAFFF",
    "block-owner-1": "#FFB454",
    "block-owner-2": "#7BD88F",
    "block-owner-3": "#D787FF",
    "block-owner-4": "#FF8787",
    "block-owner-5": "#5FD7D7",
    "block-owner-6": "#F0E68C",
    "block-owner-7": "#C0C0C0",
    "block-free": "#6B7280",
    "block-down": "#FF6B6B",
    "block-mixed-bg": "#2B303B",
    "histogram-bar": "#5FAFFF",
    "histogram-mark": "#FFB454",
}

# The order `t` cycles through; other theme files found in the directory follow.
PREFERRED_ORDER = ("dark", "light", "high-contrast")
DEFAULT_THEME = "dark"

_THEME_FIELDS = {
    "name": str,
    "primary": str,
    "secondary": str,
    "warning": str,
    "error": str,
    "success": str,
    "accent": str,
    "foreground": str,
    "background": str,
    "surface": str,
    "panel": str,
    "boost": str,
    "dark": bool,
    "luminosity_spread": float,
    "text_alpha": float,
}


SHIPPED = Path(str(resources.files("kvtui") / "themes"))


def user_theme_dir() -> Path:
    """Where the user's own theme files live (see the module doc)."""
    env = os.environ.get("KVTUI_THEMES")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kvtui" / "themes"


def load_theme_file(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError.one(str(path), None, f"cannot read theme file: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputError.one(str(path), None, f"not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError.one(str(path), getattr(e, "lineno", None), f"not valid TOML: {e}") from None
    problems: list[tuple[str, int | None, str]] = []
    kwargs: dict[str, object] = {}
    for key, value in data.items():
        if key == "variables":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                problems.append((str(path), None, "[variables] must map names to colour strings"))
                continue
            problems += [(str(path), None, f"variables.{k}: {v!r} is not a colour") for k, v in value.items() if not _is_colour(v)]
            kwargs["variables"] = {**DEFAULT_VARIABLES, **value}
            continue
        want = _THEME_FIELDS.get(key)
        if want is None:
            problems.append((str(path), None, f"unknown theme field {key!r}"))
            continue
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want):
            problems.append((str(path), None, f"{key} must be a {want.__name__}"))
            continue
        if isinstance(value, str) and key != "name" and not _is_colour(value):
            problems.append((str(path), None, f"{key}: {value!r} is not a colour"))
            continue
        kwargs[key] = value
    for required in ("name", "primary"):
        if required not in kwargs:
            problems.append((str(path), None, f"missing required field {required!r}"))
    if problems:
        raise InputError(problems)
    kwargs.setdefault("variables", dict(DEFAULT_VARIABLES))
    return Theme(**kwargs)  # type: ignore[arg-type]


def _is_colour(text: str) -> bool:
    try:
        Color.parse(text)
    except ColorParseError:
        return False
    return True


def _to_stderr(message: str) -> None:
    print(f"kvtui: {message}", file=sys.stderr)


def load_themes(directory: Path | None = None, skipped: Callable[[str], None] = _to_stderr) -> list[Theme]:
    """The shipped themes and the user's (or only those in `directory`), preferred first; a
    broken file is skipped and `skipped` told why, naming the file."""
    dirs = [directory] if directory is not None else [SHIPPED, user_theme_dir()]
    by_name: dict[str, Theme] = {}
    for d in dirs:
        if d is None or not d.is_dir():
            continue
        for p in sorted(d.glob("*.toml")):
            try:
                t = load_theme_file(p)
            except InputError as e:
                skipped(f"{e}\n(theme file skipped; the others are loaded)")
                continue
            by_name[t.name] = t
    rank = {name: i for i, name in enumerate(PREFERRED_ORDER)}
    return sorted(by_name.values(), key=lambda t: (rank.get(t.name, len(rank)), t.name))


def install_themes(app, themes: list[Theme], theme: str | None) -> None:
    """Register kvtui's themes on an app (with a plain dark one if none loaded) and pick
    `theme`, the default when None: the simulation's app and the live app alike."""
    for t in themes:
        app.register_theme(t)
    if "dark" not in app.available_themes:
        app.register_theme(Theme(name="dark", primary="#5FAFFF", dark=True, variables=dict(DEFAULT_VARIABLES)))
    app.theme = theme or DEFAULT_THEME
