"""The measured blocks of docs/: a benchmark's `--write-doc FILE` replaces the text between
`<!-- measured: NAME -->` and `<!-- /measured -->` in FILE with what it just measured.

These are the machine's figures (CPU time, memory, load) or runs too long for CI's docs check,
so `docs/generate.py` leaves them alone; each block says when, where and by which command it
was measured, so a reader can rerun it. One helper for every benchmark that writes one.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path


def replace_block(path: Path, name: str, body: str) -> None:
    """Put `body` between FILE's `<!-- measured: name -->` and its `<!-- /measured -->`;
    exits with a message when the file has no such block (nothing is written then)."""
    text = path.read_text()
    pattern = re.compile(rf"(<!-- measured: {re.escape(name)} -->\n).*?(<!-- /measured -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no '<!-- measured: {name} -->' ... '<!-- /measured -->' block to replace")
    path.write_text(pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text, count=1))
    print(f"wrote the measured block {name!r} into {path}", file=sys.stderr)


def command_line(script: str, argv: list[str]) -> str:
    """How to rerun it: `python benchmarks/SCRIPT ARGS`."""
    return shlex.join(["python", f"benchmarks/{script}", *argv])


def machine(when: str = "at the end") -> str:
    """`2 CPUs, load average 0.3 at the end`: how busy the machine was (other work shares it)."""
    return f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} {when}"
