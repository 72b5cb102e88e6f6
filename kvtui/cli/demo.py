"""`kvtui demo [NAME]`: the app on a scenario shipped inside the package.

A wheel install has no checkout, so no `scenarios/` directory beside it: the scenarios that
need no external data (no trace files) are package data (`kvtui/scenarios`, a link to the
checkout's `scenarios/` that the wheel build copies; pyproject.toml lists which). `kvtui demo`
opens the story scenario, pressure.yaml; `--list` names the others, `--path NAME` prints where
one is (to copy it and edit).
"""

from __future__ import annotations

from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

from kvtui.cli.common import UsageError

DEFAULT = "pressure"
USAGE = "kvtui demo [NAME] [--policy P] [--seed N] [--vs P] [--theme T] | --list | --path NAME"


NOT_SHIPPED = ("agentic.yaml", "azure-*.yaml", "mooncake*.yaml")
"""The scenarios that read trace files from outside the checkout: pyproject.toml's
exclude-package-data leaves them out of the wheel (tests/cli/test_packaging.py holds the two
lists equal), and a checkout's `--list` leaves them out too, so it names what a wheel ships."""


def packaged() -> dict[str, Path]:
    """Shipped scenario name -> its file (inside the installed package, or the checkout)."""
    root = Path(str(resources.files("kvtui") / "scenarios"))
    return {p.stem: p for p in sorted(root.glob("*.yaml")) if not any(fnmatch(p.name, n) for n in NOT_SHIPPED)}


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(f"usage: {USAGE}\n\n{__doc__.split(chr(10), 2)[2].strip()}\n\nscenarios: {', '.join(packaged())}\n"
              "The options are the app's (`kvtui SCENARIO --help`).")
        return 0
    if argv[:1] == ["--list"]:
        shipped = packaged()
        width = max(map(len, shipped), default=0) + 2  # a fixed 22 ran control-plane-patterns into its path
        print("\n".join(f"{name:<{width}}{path}" for name, path in shipped.items()))
        return 0
    if argv[:1] == ["--path"]:
        print(find(argv[1] if len(argv) > 1 else DEFAULT))
        return 0
    name, rest = (argv[0], argv[1:]) if argv and not argv[0].startswith("-") else (DEFAULT, argv)
    from kvtui.cli.app import main as app_main

    return app_main([str(find(name)), *rest])


def find(name: str) -> Path:
    """The packaged scenario called `name` (with or without .yaml), or a usage error naming them."""
    shipped = packaged()
    path = shipped.get(name.removesuffix(".yaml"))
    if path is None:
        raise UsageError(f"kvtui demo: no packaged scenario {name!r}; shipped: {', '.join(shipped)}")
    return path
