"""The docs say what the code does: generated blocks match their runs, citations resolve.

The quick generated blocks of README.md and docs/*.md are rerun here (the slow ones in
.ci/checks/docs.sh); `python docs/generate.py --write` rewrites them after a change.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from docs_support import generate

ROOT = Path(__file__).resolve().parents[1]




@pytest.fixture(scope="module")
def maker(tmp_path_factory):
    return generate.Maker(tmp_path_factory.mktemp("docs"))


@pytest.mark.parametrize("path", generate.DOCS, ids=lambda p: p.name)
def test_quick_blocks_print_what_the_docs_say(path, maker):
    stale = generate.stale(path, path.read_text(), maker, "quick")
    assert not stale, "\n\n".join(f"{b.where}: {b.spec}\n{diff}" for b, diff in stale) + (
        "\n\nrun: python docs/generate.py --write"
    )


def test_a_hand_edited_figure_fails_the_check(maker):
    readme = generate.ROOT / "README.md"
    text = readme.read_text()
    block = next(b for b in generate.blocks_in(readme, text) if b.quick and b.spec.startswith("kvtui compare"))
    edited_body = re.sub(r"\d", lambda m: str((int(m[0]) + 1) % 10), block.body, count=1)
    edited = text.replace(block.body, edited_body, 1)
    assert [b.line for b, _ in generate.stale(readme, edited, maker, "quick")] == [block.line]


def test_a_command_block_is_its_stdout_verbatim_and_slow(tmp_path):
    doc = tmp_path / "x.md"
    text = "intro\n<!-- generated: printf '| a |\\n|---|\\n' -->\nold\n<!-- /generated -->\nend\n"
    (block,) = generate.blocks_in(doc, text)
    assert not block.quick
    new = generate.rewritten(doc, text, generate.Maker(tmp_path), "all")
    assert new == "intro\n<!-- generated: printf '| a |\\n|---|\\n' -->\n| a |\n|---|\n<!-- /generated -->\nend\n"


def test_a_failing_block_names_its_file_and_line(tmp_path):
    doc = generate.ROOT / "docs" / "x.md"
    text = "# x\n\n<!-- generated: kvtui run no-such.yaml -->\n<!-- /generated -->\n"
    with pytest.raises(generate.GenerateError, match=r"^docs/x\.md:3: `kvtui run no-such\.yaml` exited 2"):
        generate.rewritten(doc, text, generate.Maker(tmp_path), "all")


def test_a_drawn_chart_is_checked_byte_for_byte(tmp_path):
    """An `svg` block's text is its image link; the file it draws is compared too (here it is
    missing from the repository, so the block is stale although its link is right)."""
    doc = generate.ROOT / "docs" / "x.md"
    sweep = "kvtui sweep docs/first-scenario.yaml --grid workload.arrival.rate=1,2 --out r.jsonl"
    chart = 'svg screenshots/no-such-chart.svg "a chart" kvtui plot r.jsonl --x rate --y ttft.p95'
    text = f"<!-- generated: {sweep} -->\n<!-- /generated -->\n<!-- generated: {chart} -->\n<!-- /generated -->\n"
    maker = generate.Maker(tmp_path)
    made = generate.rewritten(doc, text, maker, "all")
    assert "![a chart](../screenshots/no-such-chart.svg)\n<!-- /generated -->" in made
    assert b"<svg" in maker.drawn[chart][1]
    stale = generate.stale(doc, made, maker, "all")
    assert [(b.spec, why) for b, why in stale] == [(chart, "screenshots/no-such-chart.svg is not what the run draws")]


@pytest.mark.parametrize("spec", ['kvtui run "x', " "])
def test_a_spec_that_cannot_be_read_names_its_file_and_line(tmp_path, spec):
    doc = generate.ROOT / "docs" / "x.md"
    text = f"# x\n<!-- generated: {spec} -->\n<!-- /generated -->\n"
    with pytest.raises(generate.GenerateError, match=r"^docs/x\.md:2: "):
        generate.rewritten(doc, text, generate.Maker(tmp_path), "all")


def test_the_readme_is_a_front_door():
    assert len((ROOT / "README.md").read_bytes()) <= 12_000


# -- citations in kvtui's docstrings and comments --------------------------------------------

CITED = re.compile(r"(?<![\w/.-])((?:\.\./)?(?:[\w.-]+/)*[\w-]+\.(?:py|rs|go|yaml|toml|md|tcss))\b")
UPSTREAM = re.compile(
    r"vllm|llm-d|dynamo|sglang|textual|pyyaml|etcd|inference-perf|harlequin|mooncake|lambdalabs|"
    r"gateway-api-inference-extension|simpy", re.I)
VERSION = re.compile(r"\b(v?\d+\.(\d+|x)(\.\d+)*|v\d+|commit [0-9a-f]{7,40})\b|@[0-9a-f]{7,40}\b")
BESIDE = "../shared/"  # the design notes and data placed beside the checkout (see the README)


def _texts(path: Path):
    """(line, text) of every docstring and comment block of one module."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc
    block: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if block and tok.start[0] != block[-1][0] + 1:
                yield block[0][0], "\n".join(t for _, t in block)
                block = []
            block.append((tok.start[0], tok.string))
    if block:
        yield block[0][0], "\n".join(t for _, t in block)


def _in_repo(cited: str, files: list[str]) -> bool:
    return any(f == cited or f.endswith("/" + cited) for f in files)


def unresolved_citations() -> list[str]:
    """Cited paths that are neither in the repository nor upstream with a version."""
    files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()
             and not {".git", ".venv"} & set(p.parts)]
    bad = []
    for module in sorted((ROOT / "kvtui").rglob("*.py")):
        for line, text in _texts(module):
            upstream = bool(UPSTREAM.search(text) and VERSION.search(text))
            for cited in CITED.findall(text):
                if not (cited.startswith(BESIDE) or _in_repo(cited, files) or upstream):
                    bad.append(f"{module.relative_to(ROOT)}:{line}: {cited}")
    return bad


def test_every_cited_file_exists_or_names_its_upstream_version():
    """A docstring or comment that cites `path.py` means a file of this repository, or names the
    upstream project and the version it was read at in the same docstring or comment block."""
    assert unresolved_citations() == [], "cite a file of this repository, or name the upstream repo and version read"
