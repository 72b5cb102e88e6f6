"""Fuzzing the command line's input surface (issue 10): scenario files, `--set` values, argument lists.

The promise under test, for every generated input: `kvtui` exits 0 or 2, never 1, never with a
traceback, within a time bound; and whatever `validate` accepts, `run` finishes with exit 0.
Inputs start from a small valid scenario and are mutated along the model's own field paths
(so every field is reached, with in-range, edge and absurd values), then at the text level
(truncation, junk, YAML bombs, deep nesting, tags, bad bytes). The size knob is
KVTUI_FUZZ_SCALE (see fuzz_support.py); `KVTUI_FUZZ_SCALE=50` is the by-hand campaign.

`test_fuzz_scenario_classes` adds the generator classes of issue 24's independent campaign,
each counted apart (`scenario_classes.<class>` in the tally): semantic mutation of the
shipped scenarios, valid-but-extreme values (at a field's bounds), typeswap, structure,
depth, YAML features and unicode. Beyond "never a traceback", it holds the issue's oracle:
every exit 2 names its file, no hang (the time bound), no out-of-memory (the campaign's
memory cap), and every accepted run within FACTOR x its printed estimate (CPU time).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import Tally, call, cap_memory, estimated_seconds, fuzz_settings, judged_run, names_its_file
from kvtui.scenario.model import Scenario
from kvtui.scenario.schema import field_types, is_dataclass_type, literal_choices, mapping_item, split_optional, tuple_item

BASE = {
    "name": "fuzz",
    "seed": 1,
    "latency": {"model": "linear", "prefill_ms_per_token": 0.1, "decode_ms_per_token": 0.1},
    "cluster": {"block_size": 16, "nodes": [{"name": "a", "kv_blocks": 64, "max_num_seqs": 4}, {"name": "b", "kv_blocks": 64}]},
    "router": {"policy": "load_prefix"},
    "workload": {
        "requests": 12,
        "arrival": {"process": "poisson", "rate": 5},
        "groups": [{"name": "g", "system_prompt_tokens": 40, "question_tokens": 24, "output_tokens": 6, "turns": 2}],
    },
}
# validate-accepted scenarios estimated above this are not run (counted); a campaign by hand
# raises it (KVTUI_FUZZ_RUN_CAP_S=60, the independent campaign's limit) to run them all
RUN_ESTIMATE_CAP_S = float(os.environ.get("KVTUI_FUZZ_RUN_CAP_S", "5"))


@pytest.fixture(autouse=True)
def _in_a_temporary_directory(tmp_path, monkeypatch):
    """Generated scenarios name relative paths (`metadata.dir: a`): keep what they write here."""
    monkeypatch.chdir(tmp_path)


def _leaf_paths() -> list[tuple[tuple, object, dict]]:
    """(path as keys/indexes, type, metadata) of every leaf field of the model, one item deep."""
    out = []

    def walk(cls, path, depth):
        for name, (f, hint) in field_types(cls).items():
            tp, _ = split_optional(hint)
            here = path + (name,)
            if is_dataclass_type(tp) and depth < 6:
                out.append((here, tp, f.metadata))
                walk(tp, here, depth + 1)
            elif (item := tuple_item(tp)) is not None:
                out.append((here, tp, f.metadata))
                if is_dataclass_type(item):
                    walk(item, here + (0,), depth + 1)
                else:
                    out.append((here + (0,), item, f.metadata))
            elif (item := mapping_item(tp)) is not None:
                out.append((here, tp, f.metadata))
                if is_dataclass_type(item):
                    walk(item, here + ("x",), depth + 1)
            else:
                out.append((here, tp, f.metadata))

    walk(Scenario, (), 0)
    return out


LEAVES = _leaf_paths()
ABSURD = [None, "", "x", "1e400", ".nan", ".inf", "-.inf", -1, 0, 1, 2**31, 2**63, 2**64, 10**30, 1e30, -1e30,
          0.5, True, [], {}, [1, 2], {"a": 1}, "1" * 400, "\u0000", "\ud800", "1_000", "0x10", "~"]


def value_for(tp, meta, tame: bool = False) -> st.SearchStrategy:
    """In-range values most of the time, edges and absurd values the rest (`tame`: in range only)."""
    lo, hi = meta.get("min"), meta.get("max")
    edges = [v for b in (lo, hi) if b is not None for v in (b, b - 1, b + 1, b * 10)]
    if tp is int:
        good = st.integers(min_value=int(lo) if lo is not None else -5, max_value=min(int(hi), 200) if hi is not None else 200)
    elif tp is float:
        good = st.floats(min_value=float(lo) if lo is not None else 0.0, max_value=min(float(hi), 100.0) if hi is not None else 100.0)
    elif tp is bool:
        good = st.booleans()
    elif (choices := literal_choices(tp)) is not None:
        good = st.sampled_from(list(choices) + ["nope"])
    elif tp is str:
        good = st.sampled_from(["a", "b", "g", "round_robin", "h100-80gb", "llama-3.1-8b", "always", "node", "zz"])
    else:
        good = st.just(None)
    if tame:
        return good
    return st.one_of(good, good, st.sampled_from(edges or [0]), st.sampled_from(ABSURD), st.text(max_size=12))


def _set_path(doc, path, value) -> None:
    node = doc
    for i, key in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(node, dict):
            child = node.get(key)
            if not isinstance(child, (dict, list)):
                child = [{}] if isinstance(nxt, int) else {}
                node[key] = child
            node = child
        elif isinstance(node, list):
            if not node:
                node.append({} if not isinstance(nxt, int) else [])
            node = node[min(key, len(node) - 1)] if isinstance(key, int) else node[0]
            if not isinstance(node, (dict, list)):
                return
        else:
            return
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and node and isinstance(last, int):
        node[min(last, len(node) - 1)] = value


BOMBS = [
    "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)),
    "m0: &m0 {k: 1}\n" + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}}}\n" for i in range(1, 300)),
    "m0: &m0 {a: 1, b: 2}\n" + "".join(f"m{i}: &m{i} {{<<: [" + ",".join([f"*m{i - 1}"] * 6) + "]}\n" for i in range(1, 10)),
    "deep: " + "[" * 900 + "]" * 900 + "\n",
    "deep: " + "{a: " * 300 + "1" + "}" * 300 + "\n",
    "loop: &l [*l]\n",
    "x: !!python/object:os.system {}\n",
    "x: *undefined\n",
    "---\nname: a\n---\nname: b\n",
]


@st.composite
def scenario_texts(draw) -> bytes:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    tame = draw(st.booleans())  # half the inputs change fields within their bounds only: they
    # mostly validate, and then must run (the "validate ok means runs" half of the oracle)
    scalar_leaves = [leaf for leaf in LEAVES if leaf[1] in (int, float, bool, str) or literal_choices(leaf[1])]
    for _ in range(draw(st.integers(0, 4))):
        path, tp, meta = draw(st.sampled_from(scalar_leaves if tame else LEAVES))
        _set_path(doc, list(path), draw(value_for(tp, meta, tame)))
    if tame:
        return yaml.safe_dump(doc).encode()
    if draw(st.integers(0, 9)) == 0:
        doc = draw(st.sampled_from([None, [], "text", 5, {"name": "minimal"}]))
    try:
        text = yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, UnicodeEncodeError):
        text = b"name: x\n"
    mutation = draw(st.integers(0, 9))
    if mutation == 0:
        text = text[: draw(st.integers(0, len(text)))]
    elif mutation == 1:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.binary(max_size=8)) + text[at:]
    elif mutation == 2:
        text = draw(st.sampled_from(BOMBS)).encode() + text
    elif mutation == 3:
        lines = text.split(b"\n")
        i = draw(st.integers(0, len(lines) - 1))
        text = b"\n".join(lines[:i] + [lines[i]] * 2 + lines[i + 1:])
    return text


def _check_run_after_validate(path: str, out, tally: Tally, tmp: Path) -> None:
    """validate said ok: run must finish with exit 0 within FACTOR x its estimate (unless the
    estimate is past the cap: then it is counted, not run)."""
    estimate = estimated_seconds(out.out)
    if estimate > RUN_ESTIMATE_CAP_S:
        tally.add("accepted_not_run_big")
        return
    ran, kind = judged_run(["run", path, "--json", str(tmp / "r.json")], estimate)
    if kind != "accepted_run_ok":
        tally.failed(kind, f"validate accepted {path} but run ended {kind}: {ran.describe()}\n{Path(path).read_bytes()[:3000]!r}")
        return
    tally.add(kind)


def _validate_then_run(text: bytes, tmp: Path, tally: Tally, label: str = "") -> None:
    """validate the scenario `text`: exit 0, or exit 2 naming its file; what it accepts must
    run (`_check_run_after_validate`)."""
    path = tmp / "s.yaml"
    path.write_bytes(text)
    out = call(["validate", str(path)])
    if out.kind == "refused" and not names_its_file(out, (str(path), "/")):
        out.kind = "refused_without_file"
    if out.kind not in ("ok", "refused"):
        tally.failed(out.kind, f"{label}{out.describe()}\ninput: {text[:3000]!r}")
        return
    tally.add(out.kind)
    if out.kind == "ok":
        _check_run_after_validate(str(path), out, tally, tmp)


def test_fuzz_scenario_files(tmp_path_factory):
    tally = Tally("scenario_files")

    @fuzz_settings(40)
    @given(scenario_texts())
    def check(text):
        _validate_then_run(text, tmp_path_factory.mktemp("s"), tally)

    try:
        check()
    finally:
        tally.write()
    tally.assert_clean()


SET_VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from([str(v) for v in ABSURD]),
    st.integers(0, 900).map(lambda n: "[" * n + "]" * n),
    st.integers(0, 900).map(lambda n: "{a: " * n + "1" + "}" * n),
    st.sampled_from(["&a [*a]", "&a {b: *a}", "[*x]", "!!python/name:os.system", "{<<: &a {x: 1}, y: *a}",
                     "[&a [1,1,1,1,1,1,1,1], " + ", ".join(["[*a,*a,*a,*a,*a,*a,*a,*a]"] * 8) + "]"]),
)


@st.composite
def set_args(draw) -> list[str]:
    args = []
    for _ in range(draw(st.integers(1, 3))):
        path, tp, meta = draw(st.sampled_from(LEAVES))
        dotted = ".".join(str(p) for p in path)
        if draw(st.booleans()):
            value = yaml.safe_dump(draw(value_for(tp, meta)), default_flow_style=True).strip()
            value = value[:-4].strip() if value.endswith("\n...") or value.endswith("...") else value
        else:
            value = draw(SET_VALUES)
        if draw(st.integers(0, 9)) == 0:
            dotted = draw(st.sampled_from(["", ".", "a..b", "cluster.nodes.99.kv_blocks", "cluster.nodes.x", "=", "a" * 300]))
        args += ["--set", f"{dotted}={value}"]
    return args


def test_fuzz_set_values(tmp_path_factory):
    tally = Tally("set_values")
    base = tmp_path_factory.mktemp("base") / "base.yaml"
    base.write_text(yaml.safe_dump(BASE))

    @fuzz_settings(40)
    @given(set_args())
    def check(args):
        out = call(["validate", str(base), *args])
        if out.kind not in ("ok", "refused"):
            tally.failed(out.kind, f"{out.describe()}\nargs: {args!r}")
            return
        tally.add(out.kind)
        if out.kind == "ok":
            tmp = tmp_path_factory.mktemp("r")
            estimate = estimated_seconds(out.out)
            if estimate > RUN_ESTIMATE_CAP_S:
                tally.add("accepted_not_run_big")
                return
            ran, kind = judged_run(["run", str(base), *args, "--json", str(tmp / "r.json")], estimate)
            if kind != "accepted_run_ok":
                tally.failed(kind, f"validate accepted {args!r} but run ended {kind}: {ran.describe()}")
                return
            tally.add(kind)

    try:
        check()
    finally:
        tally.write()
    tally.assert_clean()


@st.composite
def argument_lists(draw, scenario: str, targets: dict[str, str]) -> list[str]:
    command = draw(st.sampled_from(["run", "validate", "compare", "schema", "profiles", "wal", "--version", "-h"]))
    args = [command]
    if command in ("run", "validate", "compare", "profiles"):
        args.append(draw(st.sampled_from([scenario, scenario, "missing.yaml", "/", "/dev/null", targets["fifo"]])))
    if command == "wal":
        args += [draw(st.sampled_from(["inspect", "verify", "dump", "nope"])), draw(st.sampled_from(list(targets.values())))]
    options = {
        "--seed": st.sampled_from(["0", "1", "-1", "2**63", str(2**63), str(2**63 - 1), "x", "1e3", ""]),
        "--policy": st.sampled_from(["round_robin", "dynamo", "nope", ""]),
        "--json": st.sampled_from(list(targets.values())),
        "--set": st.sampled_from(["workload.requests=3", "seed=-1", "x=1", "=", "router.policy=round_robin"]),
        "--policies": st.sampled_from(["round_robin,least_loaded", "nope", ","]),
        "--sweep": st.sampled_from(["cluster.nodes.0.kv_blocks=32,64", "nokey", "seed=1,2", "x=1"]),
        "--ladder": st.sampled_from(["1,2", "0", "-1", "nan", "inf", "1e300", "1e6", "x"]),
        "--force": st.just(None),
        "--help": st.just(None),
        "--bogus": st.just(None),
    }
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(sorted(options)))
        value = draw(options[name])
        args += [name] if value is None else [name, value]
    return args


def test_fuzz_argument_lists(tmp_path_factory):
    tally = Tally("argument_lists")
    tmp = tmp_path_factory.mktemp("args")
    scenario = tmp / "s.yaml"
    scenario.write_text(yaml.safe_dump(BASE))
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    link = tmp / "link"
    link.symlink_to(tmp / "elsewhere.json")
    (tmp / "adir").mkdir()
    targets = {"fifo": str(fifo), "link": str(link), "dir": str(tmp / "adir"), "null": "/dev/null",
               "nodir": str(tmp / "no" / "x.json"), "file": str(tmp / "out.json"), "scenario": str(scenario)}

    @fuzz_settings(30)
    @given(argument_lists(str(scenario), targets))
    def check(args):
        out = call(args)
        tally.add(out.kind)
        assert out.kind in ("ok", "refused"), f"{out.describe()}\nargs: {args!r}"
        assert fifo.is_fifo() and link.is_symlink(), f"{args!r} replaced a special file"

    try:
        check()
    finally:
        tally.write()
    tally.assert_clean()


def test_bombs_are_refused_with_a_line(tmp_path):
    """Each YAML bomb of the issue ends as exit 2 with file:line, quickly (the time bound)."""
    for i, bomb in enumerate(BOMBS[:6]):
        path = tmp_path / f"b{i}.yaml"
        path.write_text(bomb + "name: x\n")
        out = call(["validate", str(path)], seconds=20)
        assert out.kind == "refused", out.describe()
        assert f"{path}:" in out.err


def test_model_fields_all_have_bounds():
    """Every number a scenario holds has a documented lower and upper bound (issue 10, item 1)."""
    missing = []
    for path, tp, meta in LEAVES:
        if tp in (int, float) and not ("min" in meta and "max" in meta):
            missing.append(".".join(map(str, path)))
    assert not missing, f"numeric fields without min/max: {missing}"


def test_examples_of_the_issue(tmp_path):
    base = tmp_path / "b.yaml"
    base.write_text(yaml.safe_dump(BASE))
    minimal = tmp_path / "m.yaml"
    minimal.write_text("name: minimal\n")
    out = call(["validate", str(minimal)])
    assert out.kind == "refused" and "never ends" in out.err
    for args in (["--set", "cluster.nodes.0.kv_blocks=1e30"], ["--set", "cluster.nodes.0.kv_blocks=100000000"],
                 ["--set", "workload.groups.0.question_tokens=9.3e18"], ["--set", "name=&a [*a]"],
                 ["--set", "name=" + "[" * 900 + "]" * 900]):
        out = call(["validate", str(base), *args])
        assert out.kind == "refused", (args, out.describe())
    out = call(["validate", str(base), "--set", "cluster.nodes.0.name=" + "n" * 70_000])
    assert out.kind == "refused" and "longer than 4,096 characters" in out.err
    out = call(["run", str(base), "--seed", "-1"])
    assert out.kind == "refused" and "--seed" in out.err
    # a million closed-loop users: over the budget, and --force is what lets it through validate
    big = ["--set", "workload.arrival.process=closed_loop", "--set", "workload.arrival.users=100000",
           "--set", "workload.requests=10000000"]
    out = call(["validate", str(base), *big])
    assert out.kind == "refused" and "over budget" in out.err and "cost estimate" in out.out
    assert call(["validate", str(base), *big, "--force"]).kind == "ok"


def test_dataclass_leaves_cover_the_model():
    names = {p[0] for p, _, _ in LEAVES}
    assert names == {f.name for f in dataclasses.fields(Scenario)}


# ---------------------------------------------------------------------------------------------
# The generator classes of issue 24, each counted apart


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))
SHIPPED += sorted((SHIPPED[0].parent / "seed-table").glob("*.yaml"))
NUMERIC_LEAVES = [leaf for leaf in LEAVES if leaf[1] in (int, float) and "min" in leaf[2] and "max" in leaf[2]]
UNICODE = ["名前", "\u200bzero\u200bwidth", "\u202eevil", "e\u0301", "🙂" * 50, "\u00a0", "ＡＢＣ", "١٢٣", "\ufeffbom", "a\u0000b"]


def _shipped(draw) -> dict:
    """A shipped scenario, its trace path made absolute (the copy lives elsewhere), and most of
    the time its request count cut so that a run is small."""
    path = draw(st.sampled_from(SHIPPED))
    doc = yaml.safe_load(path.read_text())
    trace = (doc.get("workload") or {}).get("trace")
    if isinstance(trace, dict) and isinstance(trace.get("path"), str):
        trace["path"] = str((path.parent / trace["path"]).resolve())
    if draw(st.integers(0, 3)) and isinstance(doc.get("workload"), dict):
        doc["workload"]["requests"] = draw(st.integers(1, 60))
    return doc


def _semantic(draw, doc: dict) -> dict:
    scalar = [leaf for leaf in LEAVES if leaf[1] in (int, float, bool, str) or literal_choices(leaf[1])]
    for _ in range(draw(st.integers(1, 3))):
        path, tp, meta = draw(st.sampled_from(scalar))
        _set_path(doc, list(path), draw(value_for(tp, meta, tame=True)))
    return doc


def _extreme(draw, doc: dict) -> dict:
    """Valid but extreme: a numeric field at its bound, or just inside it."""
    for _ in range(draw(st.integers(1, 3))):
        path, tp, meta = draw(st.sampled_from(NUMERIC_LEAVES))
        value = draw(st.sampled_from([meta["min"], meta["max"]]))
        if tp is float and draw(st.booleans()):
            value = float(value) * (1 - 1e-9) if value else 1e-300
        _set_path(doc, list(path), int(value) if tp is int else float(value))
    return doc


def _typeswap(draw, doc: dict) -> dict:
    path, tp, _ = draw(st.sampled_from(LEAVES))
    swapped = {int: ["12", 1.5, True, [1], {"a": 1}], float: ["x", [1.0], {"v": 1}, False], bool: [1, "yes", [], 0.0],
               str: [1, 2.5, [], {"a": "b"}, True]}.get(tp, [1, "x", [], {}, None])
    _set_path(doc, list(path), draw(st.sampled_from(swapped)))
    return doc


def _structure(draw, doc: dict) -> dict:
    path, tp, _ = draw(st.sampled_from(LEAVES))
    action = draw(st.sampled_from(["drop", "list", "map", "many_nodes", "empty"]))
    if action == "drop":
        node = doc
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    elif action == "many_nodes":
        doc.setdefault("cluster", {})["nodes"] = [{"name": f"n{i}", "kv_blocks": 16} for i in range(draw(st.sampled_from([64, 500])))]
    else:
        _set_path(doc, list(path), {"list": [doc.get(path[0])], "map": {"x": [1]}, "empty": []}[action])
    return doc


def _depth(draw, doc: dict) -> dict:
    path, _, _ = draw(st.sampled_from(LEAVES))
    value: object = 1
    for _ in range(draw(st.sampled_from([30, 200, 2000]))):
        value = {"a": value} if draw(st.booleans()) else [value]
    _set_path(doc, list(path), value)
    return doc


def _unicode(draw, doc: dict) -> dict:
    text = draw(st.sampled_from(UNICODE))
    target = draw(st.sampled_from(["name", "node", "group", "key"]))
    if target == "name":
        doc["name"] = text
    elif target == "node" and isinstance(doc.get("cluster"), dict) and doc["cluster"].get("nodes"):
        doc["cluster"]["nodes"][0]["name"] = text
    elif target == "group" and (doc.get("workload") or {}).get("groups"):
        doc["workload"]["groups"][0]["name"] = text
    else:
        doc[text] = 1
    return doc


YAML_FEATURES = [
    "defaults: &d {max_num_seqs: 8, kv_blocks: 64}\ncluster:\n  nodes:\n    - {<<: *d, name: a}\n    - {<<: *d, name: b}\n",
    "cluster: {block_size: !!int '16'}\n",
    "cluster: {block_size: !!float 16}\n",
    "name: !!binary aGVsbG8=\n",
    "name: |\n  many\n  lines\n",
    "name: >-\n  folded\n  text\n",
    "seed: 0o17\n",
    "seed: 1_000\n",
    "seed: 0x1F\n",
    "until_s: 1:30\n",
    "until_s: .inf\n",
    "name: 2001-12-14\n",
    "%YAML 1.1\n---\nname: directive\n",
    "name: x\n...\n",
    "? name\n: complex\n",
    "name: x # comment\n",
    "{name: flow, seed: 3}\n",
    "name: [a, b]\n",
    "cluster: {nodes: &n [{name: a}], }\nrouter: {policy: *n}\n",
]


def _yaml_text(draw, doc: dict) -> bytes:
    """The document, then one YAML feature appended (later keys are duplicates: refused with a
    line) or put in front (a directive, a merge, a tag)."""
    text = yaml.safe_dump(doc, allow_unicode=True)
    feature = draw(st.sampled_from(YAML_FEATURES))
    return (feature + text if draw(st.booleans()) else text + feature).encode("utf-8", "surrogatepass")


CLASSES = {"semantic": _semantic, "extreme": _extreme, "typeswap": _typeswap, "structure": _structure,
           "depth": _depth, "unicode": _unicode, "yaml_features": None}


@st.composite
def classed_scenarios(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(sorted(CLASSES)))
    doc = _shipped(draw) if kind == "semantic" or draw(st.booleans()) else yaml.safe_load(yaml.safe_dump(BASE))
    if kind == "yaml_features":
        return kind, _yaml_text(draw, doc)
    doc = CLASSES[kind](draw, doc)
    try:
        return kind, yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
        return kind, b"name: x\n"


def test_fuzz_scenario_classes(tmp_path_factory):
    """issue 24's classes: never a traceback, a hang or an OOM; each exit 2 names its file; each
    accepted run within FACTOR x its estimate. Counted per class (`KVTUI_FUZZ_TALLY`)."""
    cap_memory()
    tallies = {kind: Tally(f"scenario_classes.{kind}") for kind in CLASSES}

    @fuzz_settings(14)
    @given(classed_scenarios())
    def check(case):
        kind, text = case
        _validate_then_run(text, tmp_path_factory.mktemp("c"), tallies[kind], f"{kind}: ")

    try:
        check()
    finally:
        for tally in tallies.values():
            tally.write()
    for tally in tallies.values():
        tally.assert_clean()
