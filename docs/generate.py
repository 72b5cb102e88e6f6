"""Every figure in README.md and docs/*.md that comes from a run, made by running it.

    python docs/generate.py --write            # rerun every block, rewrite the docs (after a merge)
    python docs/generate.py --check            # exit 1, with a diff, where a doc says otherwise
    python docs/generate.py --check --quick    # the quick blocks only (tests/test_docs.py)
    python docs/generate.py --check --slow     # the slow ones only (.ci/checks/docs.sh)
    python docs/generate.py --list             # every block: where, quick or slow, its spec
    python docs/generate.py --write --only routing_study   # just the blocks whose spec says that

A generated block is whatever sits between two marker lines:

    <!-- generated: SPEC -->
    ...
    <!-- /generated -->

and SPEC says how to make it:

- `kvtui ARGS` runs this checkout's command line (`python -m kvtui ARGS`) and fences its stdout
  as text. It runs in a scratch directory that sees the repository's scenarios/, docs/ and
  benchmarks/, so files a command writes (a sweep's `--out`) stay out of the tree, and a later
  block of the same run of this script can read them (`kvtui plot results.jsonl` after the
  sweep that wrote it). Trailing blanks are stripped and the `wall time` line is dropped: the
  one figure that is the machine's, not the simulation's.
- `file PATH` shows a file of the repository, fenced (a scenario a page walks through).
- `seed-table` is the seed project's latency table beside kvtui's runs of the same scenarios.
- `result-shape SCENARIO` is the result document of one run as keys and value types.
- `svg PATH CAPTION kvtui ARGS` draws a chart (`ARGS` plus `--out FILE.svg`, e.g. `kvtui plot`)
  into the repository file PATH, and the block is its image link: `--write` writes the file,
  `--check` compares it byte for byte as it compares the text.
- Anything else is a shell command run at the repository root, with this Python's scripts
  first on PATH (`python`, `kvtui`); its stdout is the block, verbatim (markdown, e.g. a study
  that prints its tables).

Quick blocks are checked by the default test run; slow ones by `.ci/checks/docs.sh`. A block is
quick when it is `file`, `seed-table`, `result-shape`, `kvtui run|compare|validate|sweep` on
scenarios that finish in a few seconds (QUICK_SCENARIOS) without a `--ladder`, or `kvtui plot` (it
reads the results a sweep block before it in the same document wrote: that block must be quick
too, or the plot's check fails for want of its file); everything else is slow.

Why the sweep is quick (issue 35): docs/sweeps.md's sweep was slow, so only the full CI's docs
check read it, while the commits that moved its figures (predicted_latency's, 2026-11-25)
regenerated with `--write --only` the blocks they knew of and ran the default tests; its
predicted_latency rows went stale unseen. Its 60 short runs take about half a minute of CPU.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^<!-- generated: (?P<spec>.+?) -->\n(?P<body>.*?)^<!-- /generated -->$", re.M | re.S)
SHARED = ("scenarios", "docs", "benchmarks")
QUICK_SCENARIOS = {"scenarios/pressure.yaml", "scenarios/offload.yaml", "scenarios/admission.yaml",
                   "scenarios/concurrency.yaml", "docs/first-scenario.yaml"}
QUICK_COMMANDS = {"run", "compare", "validate", "sweep"}
SLOW_FLAGS = {"--ladder"}
MACHINE_LINES = re.compile(r"^wall time .*$\n?", re.M)


class GenerateError(Exception):
    """A block could not be made: its spec failed. The message is `file:line: what`."""


@dataclass(frozen=True)
class Block:
    """One generated block of one document: where it is, what makes it, what it says now."""

    path: Path
    line: int
    spec: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def words(self) -> list[str]:
        try:
            return shlex.split(self.spec)
        except ValueError as e:  # an unclosed quote
            raise GenerateError(f"{self.where}: cannot read `{self.spec}`: {e}") from None

    @property
    def quick(self) -> bool:
        return is_quick(self.words)


def is_quick(words: list[str]) -> bool:
    """Quick enough for the default test run (see the module docstring)."""
    if words[:1] in (["file"], ["seed-table"], ["result-shape"]):
        return True
    if words[:1] == ["svg"]:
        return is_quick(words[3:])
    if words[:2] == ["kvtui", "plot"]:
        return True
    if words[:1] != ["kvtui"] or words[1:2] and words[1] not in QUICK_COMMANDS:
        return False
    scenarios = [w for w in words if w.endswith(".yaml")]
    return bool(scenarios) and set(scenarios) <= QUICK_SCENARIOS and not SLOW_FLAGS & set(words)


def blocks_in(path: Path, text: str) -> Iterator[Block]:
    for m in BLOCK.finditer(text):
        yield Block(path, text.count("\n", 0, m.start()) + 1, m["spec"].strip(), m["body"])


# -- making a block ----------------------------------------------------------------------------


class Maker:
    """Runs specs in one scratch directory, remembering outputs (two docs may show one run)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.made: dict[str, str] = {}
        self.drawn: dict[str, tuple[Path, bytes]] = {}  # spec -> the repository file it draws
        for name in SHARED:
            (scratch / name).symlink_to(ROOT / name)

    def make(self, block: Block) -> str:
        if block.spec not in self.made:
            self.made[block.spec] = self._run(block)
        return self.made[block.spec]

    def _run(self, block: Block) -> str:
        words = block.words
        if not words:
            raise GenerateError(f"{block.where}: an empty spec: say what makes this block")
        named = NAMED.get(words[0])
        if named is not None:
            return named(self, block, words[1:])
        return self.shell(block, block.spec, ROOT)

    def shell(self, block: Block, command: str | list[str], cwd: Path) -> str:
        """stdout of `command`; a failure is a GenerateError naming the block."""
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "KVTUI_DEBUG")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run(command, shell=isinstance(command, str), cwd=cwd, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise GenerateError(f"{block.where}: `{block.spec}` exited {done.returncode}: {last}")
        return done.stdout

    def kvtui(self, block: Block, args: list[str]) -> str:
        out = self.shell(block, [sys.executable, "-m", "kvtui", *args], self.scratch)
        return fenced(MACHINE_LINES.sub("", out), "text")

    def result(self, block: Block, scenario: str) -> dict:
        """The result document of `kvtui run scenario`."""
        out = self.scratch / "result.json"
        self.shell(block, [sys.executable, "-m", "kvtui", "run", scenario, "--json", str(out)], self.scratch)
        return json.loads(out.read_text())


def draw_svg(maker: Maker, block: Block, args: list[str]) -> str:
    if len(args) < 3 or args[2] != "kvtui" or not args[0].endswith(".svg"):
        raise GenerateError(f"{block.where}: `svg` wants PATH.svg CAPTION kvtui ARGS, got {args}")
    out = maker.scratch / f"drawn-{len(maker.drawn)}.svg"
    maker.shell(block, [sys.executable, "-m", "kvtui", *args[3:], "--out", str(out)], maker.scratch)
    maker.drawn[block.spec] = (ROOT / args[0], out.read_bytes())
    link = os.path.relpath(ROOT / args[0], block.path.parent)
    return f"![{args[1]}]({link})\n"


def fenced(text: str, lang: str) -> str:
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join([f"```{lang}", *lines, "```"]) + "\n"


def show_file(maker: Maker, block: Block, args: list[str]) -> str:
    path = ROOT / args[0]
    if len(args) != 1 or not path.is_file():
        raise GenerateError(f"{block.where}: `file` wants one file of the repository, got {args}")
    return fenced(path.read_text(), "yaml" if path.suffix == ".yaml" else "text")


# The seed project's own figures (its README's latency table), the column kvtui is held to:
# avg / p95 E2E in ms; tests/sim/test_seed_table.py asserts the same runs match them exactly.
SEED_FIGURES = {
    "no-cache.yaml": ("1405 / 1405", ""),
    "exact-cache.yaml": ("205 / 205", ""),
    "prefix-reuse.yaml": ("980 / 1405", " (850-token shared prefix)"),
    "gpu-aware.yaml": ("—", " (1 in 4 needs 4,000 tokens)"),
    "gpu-aware-eviction.yaml": ("big request 4205", ""),
}


def seed_table(maker: Maker, block: Block, args: list[str]) -> str:
    rows = ["| scenario | seed avg / p95 (ms) | kvtui avg / p95 (ms) | hit rate | rejection rate |",
            "|---|---|---|---|---|"]
    for name, (seed, note) in SEED_FIGURES.items():
        doc = maker.result(block, f"scenarios/seed-table/{name}")
        e2e, requests = doc["latency_ms"]["e2e"], doc["requests"]
        rejected = requests["rejected"] / requests["arrived"]
        rows.append(f"| `{name}`{note} | {seed} | {e2e['mean']:.0f} / {e2e['p95']:.0f} | "
                    f"{doc['cache']['request_hit_rate']:g} | {rejected:g} |")
    return "\n".join(rows) + "\n"


def result_shape(maker: Maker, block: Block, args: list[str]) -> str:
    """The result document of `kvtui run SCENARIO --json` as keys and value types (the schema
    version as its value), so a renamed, added or dropped field shows in the docs' diff."""
    return fenced("\n".join(_shape(maker.result(block, args[0]), 0)), "text")


JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _shape(value: object, depth: int, key: str = "") -> Iterator[str]:
    pad, label = "  " * depth, f"{key}: " if key else "- "
    match value:
        case dict():
            yield f"{pad}{label}".rstrip() if key or depth else ""
            for k, v in value.items():
                yield from _shape(v, depth + (1 if key or depth else 0), k)
        case list():
            yield f"{pad}{label}list of" if value else f"{pad}{label}list (empty here)"
            if value:
                yield from _shape(value[0], depth + 1)
        case _ if key == "schema_version":
            yield f"{pad}{label}{value}"
        case _:
            yield f"{pad}{label}{JSON_TYPES[type(value)]}"


NAMED: dict[str, Callable[[Maker, Block, list[str]], str]] = {
    "kvtui": Maker.kvtui,
    "file": show_file,
    "seed-table": seed_table,
    "result-shape": result_shape,
    "svg": draw_svg,
}


# -- checking and writing ----------------------------------------------------------------------


def selected(blocks: Iterator[Block], speed: str, only: Sequence[str] = ()) -> Iterator[Block]:
    """speed: all, quick or slow; `only`: spec substrings, one of which must match (none: all).
    Rerunning the few blocks a change moves saves the whole run's ~14 minutes."""
    return (
        b for b in blocks
        if (speed == "all" or b.quick == (speed == "quick")) and (not only or any(o in b.spec for o in only))
    )


def stale(path: Path, text: str, maker: Maker, speed: str = "all", only: Sequence[str] = ()) -> list[tuple[Block, str]]:
    """Every block of `text` (the document at `path`) whose run says otherwise, with the diff."""
    found = []
    for block in selected(blocks_in(path, text), speed, only):
        made = maker.make(block)
        if made != block.body:
            diff = difflib.unified_diff(block.body.splitlines(), made.splitlines(), "doc", "run", lineterm="")
            found.append((block, "\n".join(diff)))
        elif block.spec in maker.drawn and not _drawn_matches(*maker.drawn[block.spec]):
            found.append((block, f"{maker.drawn[block.spec][0].relative_to(ROOT)} is not what the run draws"))
    return found


def _drawn_matches(path: Path, data: bytes) -> bool:
    return path.is_file() and path.read_bytes() == data


def rewritten(path: Path, text: str, maker: Maker, speed: str = "all", only: Sequence[str] = ()) -> str:
    wanted = {b.line for b in selected(blocks_in(path, text), speed, only)}

    def one(m: re.Match) -> str:
        block = Block(path, text.count("\n", 0, m.start()) + 1, m["spec"].strip(), m["body"])
        body = maker.make(block) if block.line in wanted else block.body
        return f"<!-- generated: {m['spec']} -->\n{body}<!-- /generated -->"

    return BLOCK.sub(one, text)


def check(maker: Maker, speed: str, only: Sequence[str] = ()) -> int:
    problems = [(b, d) for p in DOCS for b, d in stale(p, p.read_text(), maker, speed, only)]
    for block, diff in problems:
        print(f"{block.where}: `{block.spec}` prints something else:\n{diff}\n")
    if problems:
        print(f"{len(problems)} generated block(s) out of date: python docs/generate.py --write")
    return 1 if problems else 0


def write(maker: Maker, speed: str, only: Sequence[str] = ()) -> int:
    for path in DOCS:
        for block in selected(blocks_in(path, path.read_text()), speed, only):
            maker.make(block)
        text = path.read_text()  # again: the prose may have been edited while the blocks ran
        new = rewritten(path, text, maker, speed, only)
        if new != text:
            path.write_text(new)
            print(f"rewrote {path.relative_to(ROOT)}")
    for drawn, data in maker.drawn.values():
        if not _drawn_matches(drawn, data):
            drawn.write_bytes(data)
            print(f"drew {drawn.relative_to(ROOT)}")
    return 0


def list_blocks() -> int:
    for path in DOCS:
        for b in blocks_in(path, path.read_text()):
            print(f"{b.where}: {'quick' if b.quick else 'slow '}  {b.spec}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rerun the blocks and rewrite the docs")
    action.add_argument("--check", action="store_true", help="exit 1 where a doc differs from its run")
    action.add_argument("--list", action="store_true", help="list the blocks")
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_const", const="quick", dest="speed", default="all")
    speed.add_argument("--slow", action="store_const", const="slow", dest="speed")
    p.add_argument("--only", action="append", default=[], metavar="TEXT", help="only blocks whose spec contains TEXT")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kvtui-docs-") as scratch:
        try:
            if args.list:
                return list_blocks()
            return (write if args.write else check)(Maker(Path(scratch)), args.speed, args.only)
        except GenerateError as e:
            print(e, file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
