"""The engine is a library: importing all of it must not pull in Textual or Rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "kvtui"


def test_engine_imports_neither_textual_nor_rich():
    modules = sorted(
        "kvtui." + ".".join(p.relative_to(ENGINE).with_suffix("").parts)
        for pkg in ("sim", "store")
        for p in (ENGINE / pkg).rglob("*.py")
    )
    modules = [m.removesuffix(".__init__") for m in modules]
    code = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"engine pulled in: {out.stdout.strip()}"
    assert len(modules) > 5


def test_engine_sources_have_no_wall_clock_or_global_random():
    """Determinism: no time.time/perf_counter, no `random` module, no default_rng() without a seed."""
    offenders = []
    for p in (ENGINE / "sim").rglob("*.py"):
        text = p.read_text()
        for needle in ("import time", "import random", "datetime.now", "default_rng()"):
            if needle in text:
                offenders.append(f"{p.name}: {needle}")
    assert offenders == []
