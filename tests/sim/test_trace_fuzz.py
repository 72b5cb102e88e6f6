"""Fuzzing the three trace formats through the command line: `kvtui validate`, then `kvtui run`.

Hypothesis writes trace files (valid records mutated field by field, raw garbage lines, deep
nesting, bad bytes, empty and header-only files) and scenario trace sections (limit, start_s,
time_scale, skip_invalid, copies), and holds two rules:

- never a traceback: every outcome is exit 0, or exit 2 with `file:line: message` lines;
- what `validate` accepts, `run` finishes (exit 0) within the time bound, the campaign's
  memory cap and FACTOR x its printed estimate (fuzz_support.judged_run).

Every file is also written with other line ends or a byte-order mark now and then (CRLF, CR
alone, a UTF-8 BOM, both: issue 24's campaign found a CRLF Mooncake file that hung).

Size knob: KVTUI_FUZZ_SCALE (default 1, ~10 s in all); e.g. KVTUI_FUZZ_SCALE=10 by hand. With
KVTUI_FUZZ_REPORT=1 the counts per format and outcome are printed at the end (pytest -s).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_support import call, cap_memory, estimated_seconds, judged_run

SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))
EXAMPLES = max(1, int(25 * SCALE))
OUTCOMES: Counter = Counter()
ENDINGS: Counter = Counter()  # inputs per (format, line ends), whatever their outcome

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=SCALE <= 1,  # CI sees the same inputs every run; by hand, new ones
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

SCENARIO = """\
name: fuzz
seed: 1
model: llama-3.1-8b
latency: {{model: roofline}}
router: {{policy: {policy}}}
cluster:
  block_size: 16
  hardware: h100-80gb
  nodes:
    - {{name: a, kv_blocks: 4096, max_num_seqs: 8, max_queue: 16}}
    - {{name: b, kv_blocks: 4096, max_num_seqs: 8, max_queue: 16}}
workload:
  arrival: {{rate: {rate}}}
  trace:
{trace}
"""

# -- values, mostly plausible, sometimes not (rare branches sit at the high end of a range:
# hypothesis tries the low end, the "simplest" example, first and most) --------------------
weird_numbers = st.sampled_from([-1, -0.5, 0, 10**12, 2**63, 2**64, 1e300, 1.5, math.nan, math.inf, -math.inf, True, None, "7", [], {}])
small_len = st.integers(1, 3000)
lengths = st.one_of(small_len, small_len, small_len, weird_numbers, st.integers(-(10**15), 10**15))
times = st.one_of(st.floats(0, 1e5, allow_nan=False), st.floats(0, 1e5, allow_nan=False), weird_numbers)
id_lists = st.one_of(st.lists(st.integers(0, 50), max_size=8), st.lists(st.one_of(st.integers(-5, 2**65), weird_numbers), max_size=4), weird_numbers)
raw_lines = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"{", b"[]", b"null", b'{"timestamp": 1}', b"\xff\xfe", b"[" * 5000 + b"]" * 5000, b"{" * 3000, b"  "]),
)


def dump(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@st.composite
def mooncake_file(draw) -> bytes:
    lines = []
    t = 0.0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["good", "good", "good", "mutated", "raw"]))
        if kind == "raw":
            lines.append(draw(raw_lines))
            continue
        t += draw(st.floats(0, 5000, allow_nan=False))
        n = draw(small_len)
        rec = {"timestamp": t, "input_length": n, "output_length": draw(st.integers(0, 500)), "hash_ids": list(range(-(-n // 512)))}
        if kind == "mutated":
            field = draw(st.sampled_from(["timestamp", "input_length", "output_length", "hash_ids", "drop"]))
            if field == "drop":
                rec.pop(draw(st.sampled_from(sorted(rec))))
            else:
                rec[field] = draw({"timestamp": times, "hash_ids": id_lists}.get(field, lengths))
        lines.append(dump(rec))
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


@st.composite
def azure_file(draw) -> bytes:
    lines = [b"TIMESTAMP,ContextTokens,GeneratedTokens"] if draw(st.booleans()) else []
    seconds = 0.0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["good", "good", "good", "mutated", "raw"]))
        if kind == "raw":
            lines.append(draw(raw_lines).replace(b"\n", b" "))
            continue
        seconds += draw(st.floats(0, 30, allow_nan=False))
        stamp = f"2023-11-16 {int(seconds // 3600) % 24:02d}:{int(seconds // 60) % 60:02d}:{seconds % 60:010.7f}"
        cols = [stamp, str(draw(small_len)), str(draw(st.integers(0, 300)))]
        if kind == "mutated":
            i = draw(st.integers(0, 3))
            bad = draw(st.one_of(st.text(max_size=12), weird_numbers.map(str), st.sampled_from(["2023-13-01 00:00:00", "2023-11-16 99:00:00", "nan"])))
            cols = cols[:i] + [bad] + cols[i + 1 :] if i < 3 else cols[:2]
        lines.append(",".join(cols).encode("utf-8", "surrogatepass"))
    return b"\n".join(lines) + b"\n"


@st.composite
def weka_request(draw, depth=0):
    if depth < 2 and draw(st.integers(0, 9)) == 9:
        return {"t": draw(times), "type": "subagent", "requests": draw(st.lists(weka_request(depth + 1), max_size=3))}
    n = draw(small_len)
    rec = {"t": draw(st.floats(0, 500, allow_nan=False)), "type": "n", "in": n, "out": draw(st.integers(0, 300)),
           "hash_ids": list(range(1, 1 + n // 64)), "think_time": draw(st.floats(0, 30, allow_nan=False))}
    if draw(st.integers(0, 9)) == 9:
        field = draw(st.sampled_from(["t", "in", "out", "hash_ids", "think_time", "drop"]))
        if field == "drop":
            rec.pop(draw(st.sampled_from(sorted(rec))))
        else:
            rec[field] = draw({"t": times, "think_time": times, "hash_ids": id_lists}.get(field, lengths))
    return rec


@st.composite
def weka_file(draw) -> bytes:
    if draw(st.integers(0, 14)) == 14:
        return draw(raw_lines)
    reqs = sorted(draw(st.lists(weka_request(), min_size=draw(st.sampled_from([0] + [1] * 5)), max_size=6)), key=lambda r: r["t"] if isinstance(r.get("t"), (int, float)) and not isinstance(r.get("t"), bool) and not math.isnan(r["t"]) else 0)
    doc = {"id": draw(st.sampled_from(["s", "", 5])), "block_size": draw(st.integers(0, 19).map(lambda i: ([64] * 15 + [16, 0, -1, 2.5, "x"])[i])), "requests": reqs}
    if draw(st.integers(0, 14)) == 14:
        doc["requests"] = draw(weird_numbers)
    return json.dumps(doc, allow_nan=True, indent=draw(st.sampled_from([None, 2]))).encode()


def mostly(valid: list, invalid: list):
    return st.sampled_from(valid * 3 + invalid)


trace_section = st.fixed_dictionaries(
    {},
    optional={
        "limit": mostly([1, 3, 1000], [0, -2]),
        "start_s": mostly([0, 2.5, 100000], [-1]),
        "time_scale": mostly([1, 0.01, 100], [0]),
        "skip_invalid": st.booleans(),
        "copies": mostly([1, 2], [0]),
    },
)


LINE_ENDS = {"lf": lambda b: b, "crlf": lambda b: b.replace(b"\n", b"\r\n"), "cr": lambda b: b.replace(b"\n", b"\r"),
             "bom": lambda b: b"\xef\xbb\xbf" + b, "bom_crlf": lambda b: b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n")}
line_ends = st.sampled_from(["lf"] * 6 + sorted(set(LINE_ENDS) - {"lf"}))


def check(tmp_path: Path, capsys, fmt: str, files: dict[str, bytes], section: dict, policy: str, rate: float, ending: str = "lf") -> None:
    """validate, then run when validate accepted; record the outcome class."""
    cap_memory()
    ENDINGS[(fmt, ending)] += 1
    for name, data in files.items():
        (tmp_path / name).write_bytes(LINE_ENDS[ending](data))
    target = "sessions" if fmt == "weka" else next(iter(files))
    if fmt == "weka":
        (tmp_path / "sessions").mkdir(exist_ok=True)
        for name in files:
            (tmp_path / name).replace(tmp_path / "sessions" / name)
    lines = [f"    format: {fmt}", f"    path: {target}"] + [f"    {k}: {json.dumps(v)}" for k, v in section.items()]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.format(policy=policy, rate=rate, trace="\n".join(lines)))
    out = call(["validate", str(scenario)])
    assert out.kind in ("ok", "refused"), f"{fmt} ({ending}): {out.describe()}"
    if out.kind == "refused":
        assert all(line.startswith(str(tmp_path)) or line.startswith("  ") for line in out.err.splitlines() if line), out.err
        OUTCOMES[(fmt, "rejected by validate")] += 1
        if os.environ.get("KVTUI_FUZZ_REPORT") == "2":
            print(fmt, out.err.splitlines()[0][len(str(tmp_path)):][:150], file=sys.__stderr__)
        return
    ran, kind = judged_run(["run", str(scenario)], estimated_seconds(out.out))
    assert kind == "accepted_run_ok", f"validate accepted, run ended {kind} ({ending}):\n{ran.describe()}"
    skipped = "skipped" in ran.err
    OUTCOMES[(fmt, "accepted, ran" + (" (records skipped)" if skipped else ""))] += 1


policies = st.sampled_from(["round_robin", "dynamo", "least_loaded"])


@SETTINGS
@given(data=mooncake_file(), section=trace_section, policy=policies, ending=line_ends)
def test_fuzz_mooncake(tmp_path_factory, capsys, data, section, policy, ending):
    check(tmp_path_factory.mktemp("m"), capsys, "mooncake", {"t.jsonl": data}, section, policy, 1.0, ending)


@SETTINGS
@given(data=azure_file(), section=trace_section, policy=policies, ending=line_ends)
def test_fuzz_azure(tmp_path_factory, capsys, data, section, policy, ending):
    check(tmp_path_factory.mktemp("a"), capsys, "azure", {"t.csv": data}, section, policy, 1.0, ending)


@SETTINGS
@given(files=st.lists(weka_file(), min_size=1, max_size=3), section=trace_section, policy=policies, rate=st.sampled_from([0.5, 5.0]),
       ending=line_ends)
def test_fuzz_weka(tmp_path_factory, capsys, files, section, policy, rate, ending):
    check(tmp_path_factory.mktemp("w"), capsys, "weka", {f"c{i}.json": d for i, d in enumerate(files)}, section, policy, rate, ending)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if os.environ.get("KVTUI_FUZZ_REPORT"):
        print(f"\ntrace fuzz (KVTUI_FUZZ_SCALE={SCALE:g}): {sum(OUTCOMES.values())} inputs")
        for (fmt, outcome), n in sorted(OUTCOMES.items()):
            print(f"  {fmt:9} {outcome:35} {n}")
        for (fmt, ending), n in sorted(ENDINGS.items()):
            print(f"  {fmt:9} {'written with line ends ' + ending:35} {n}")
