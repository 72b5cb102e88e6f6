"""The import rules of docs/architecture.md, read from the source (an AST walk of kvtui/, every
import, including those inside functions and under TYPE_CHECKING):

- layers: a module imports nothing from a layer above its own (the engine never reaches up into
  the run layer, the app or the commands);
- the faces (tui/, cli/, sweep/, report.py) reach the engine (sim/) only through run/ and the
  event and view types;
- no import cycle between modules, inside a package or across packages, counting every import
  (in functions and under TYPE_CHECKING too: a cycle hidden in a function is still two modules
  that cannot be understood apart), and none between packages at all.

And one rule of the tests: a test module imports no other test module (`test_*.py`); what tests
share lives in conftest.py or a support module (tests/fuzz_support.py, tests/docs_support.py,
tests/sim/router/router_support.py, ...), so running or moving one test file never runs another's
module-level code.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "kvtui"

# Lowest first: a module may import its own layer and those below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kvtui", "kvtui.errors", "kvtui.events", "kvtui.views", "kvtui.profiles", "kvtui.percentiles"),
    ("kvtui.scenario",),
    ("kvtui.store",),
    ("kvtui.sim",),
    ("kvtui.live",),  # real engines' KV events, below the run layer that shows them (run/live.py)
    ("kvtui.run",),
    ("kvtui.report", "kvtui.sweep", "kvtui.calibrate"),
    ("kvtui.tui",),
    ("kvtui.cli", "kvtui.__main__"),
)
FACES = ("kvtui.tui", "kvtui.cli", "kvtui.sweep", "kvtui.report", "kvtui.calibrate")
ENGINE = "kvtui.sim"

# Edges that break a rule today, each with the work that removes it. The test fails when one
# is gone and still listed, so this list only shrinks.
KNOWN: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path) -> list[str]:
    """Every kvtui module one file imports."""
    module, tree = module_name(path), ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _target(node, module, path.name == "__init__.py")
            names = [base] + [f"{base}.{a.name}" for a in node.names]
            names = [n for n in names if _is_module(n)][-1:] or [base]
        else:
            continue
        out += [n for n in names if n == "kvtui" or n.startswith("kvtui.")]
    return out


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def edges() -> list[tuple[str, str]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        src = module_name(path)
        out += [(src, dst) for dst in imports(path) if dst != src]
    return out


def owner(module: str, groups) -> str | None:
    """The longest prefix of `module` among `groups`."""
    hits = [g for g in groups if module == g or module.startswith(g + ".")]
    return max(hits, key=len, default=None)


def layer_of(module: str) -> int:
    every = [g for layer in LAYERS for g in layer]
    top = owner(module, every)
    assert top is not None, f"{module} belongs to no layer: add its package to LAYERS"
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path, or None (iterative depth-first search)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        state[start], path = 1, [start]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child) == 1:
                return path[path.index(child):] + [child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, ())))))
    return None


def broken(rule) -> set[tuple[str, str]]:
    return {(a, b) for a, b in edges() if rule(a, b)}


def runs_up(a: str, b: str) -> bool:
    return layer_of(b) > layer_of(a)


def face_reaches_engine(a: str, b: str) -> bool:
    return owner(a, FACES) is not None and owner(b, (ENGINE,)) is not None


@pytest.mark.parametrize("rule", [runs_up, face_reaches_engine])
def test_no_import_breaks_a_layer_rule(rule):
    bad = broken(rule) - KNOWN
    assert not bad, "\n".join(f"{a} -> {b}" for a, b in sorted(bad))


def test_the_known_exceptions_still_exist():
    """A listed exception that was fixed must leave KNOWN (the list only shrinks)."""
    every = {(a, b) for a, b in edges()}
    assert KNOWN <= every, f"fixed, remove from KNOWN: {sorted(KNOWN - every)}"


def test_no_module_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges():
        graph[a].add(b)
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph))


def test_no_package_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges():
        if package_of(a) != package_of(b) and (a, b) not in KNOWN:
            graph[package_of(a)].add(package_of(b))
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph))


def test_the_checker_sees_a_rule_broken():
    """The rules are not vacuous: the walk finds real edges, and a made-up upward edge fails."""
    seen = {(a, b) for a, b in edges()}
    assert ("kvtui.run.drive", "kvtui.sim.engine") in seen
    assert runs_up("kvtui.sim.engine", "kvtui.run.drive")
    assert face_reaches_engine("kvtui.tui.app", "kvtui.sim.engine")
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_test_module_imports_another():
    tests = ROOT.parent / "tests"
    bad = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            bad += [f"{path.relative_to(tests)}:{node.lineno}: {n}" for n in names if n.split(".")[-1].startswith("test_")]
    assert not bad, "move what is shared to conftest.py or a support module:\n" + "\n".join(bad)
