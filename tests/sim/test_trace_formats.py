"""The trace-format table drives the replay: a format's row, not a constant, says how many tokens
a hash id names, how requests without hash ids are labelled, what unit its times are in and
whether they are bucketed, and what its files look like inside. One test per seam, each through
a row added for the test (as a new format would be)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from kvtui.cli.trace import guess_format
from kvtui.scenario.model import Arrival, Trace
from kvtui.scenario.trace_formats import TRACE_FORMATS, format_of_path
from kvtui.sim.workload.trace import TraceWorkload
from kvtui.sim.workload.trace_keys import HashChain, covered_keys
from trace_support import AZURE, MOONCAKE, WEKA, needs_data, replay

NEVER = re.compile(rb"(?!)")


def row(base: str, **changes):
    """A new format's row: `base`'s reader and meanings with `changes`, recognised by nothing."""
    return TRACE_FORMATS[base]._replace(endings=(), content=NEVER, **changes)


def mooncake_lines(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_hashed_format_is_keyed_with_its_own_hash_block(tmp_path, monkeypatch):
    monkeypatch.setitem(TRACE_FORMATS, "ids-128", row("mooncake", hash_block=128))
    f = tmp_path / "t.jsonl"
    recs = [{"timestamp": 0, "input_length": 300, "output_length": 4, "hash_ids": [7, 8, 9]},
            {"timestamp": 10, "input_length": 300, "output_length": 4, "hash_ids": [7, 8, 5]}]
    mooncake_lines(f, recs)
    _, reqs = replay("ids-128", f)
    for r, rec in zip(reqs, recs):
        n = rec["input_length"] // 16
        own = covered_keys(rec["hash_ids"], 128, rec["input_length"], 16, HashChain(b"ids-128"))
        assert list(r.block_keys[:n]) == own
        assert own != covered_keys(rec["hash_ids"], 512, rec["input_length"], 16, HashChain(b"ids-128"))
    assert reqs[0].block_keys[:16] == reqs[1].block_keys[:16]  # two 128-token ids in common: 16 blocks
    assert reqs[0].block_keys[16] != reqs[1].block_keys[16]
    with pytest.raises(Exception, match=r"expected ceil\(300/512\) = 1"):  # the same file is no 512-token trace
        replay("mooncake", f)


def test_a_format_without_hash_ids_gets_its_own_group_label(tmp_path, monkeypatch):
    monkeypatch.setitem(TRACE_FORMATS, "lengths", row("azure", group="lengths-only"))
    f = tmp_path / "t.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,100,10\n2023-11-16 18:15:47.5,200,20\n")
    _, reqs = replay("lengths", f)
    assert [r.group for r in reqs] == ["lengths-only"] * 2
    _, azure = replay("azure", f)
    assert [r.group for r in azure] == ["azure"] * 2
    assert not set(azure[0].block_keys) & set(reqs[0].block_keys)  # each label salts its own keys


def test_time_units_and_bucketing_come_from_the_row(tmp_path, monkeypatch):
    f = tmp_path / "t.jsonl"
    mooncake_lines(f, [{"timestamp": t, "input_length": 16, "output_length": 1, "hash_ids": [i]}
                       for i, t in enumerate([0, 0, 3000, 6000])])
    spread = TraceWorkload(Trace(format="mooncake", path=str(f)), Arrival(), 16, np.random.default_rng(0)).times
    assert spread == [0.0, 1.5, 3.0, 6.0]  # ms, and the tie at 0 spread over the gap to 3 s
    monkeypatch.setitem(TRACE_FORMATS, "seconds", row("mooncake", ticks_per_s=1.0, bucketed=False))
    raw = TraceWorkload(Trace(format="seconds", path=str(f)), Arrival(), 16, np.random.default_rng(0)).times
    assert raw == [0.0, 0.0, 3000.0, 6000.0]


def test_a_file_is_recognised_by_its_content_whatever_its_name(tmp_path):
    moon = tmp_path / "trace.csv"  # a Mooncake trace with a wrong ending
    mooncake_lines(moon, [{"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [1]}])
    azure = tmp_path / "trace.jsonl"
    azure.write_text("2023-11-16 18:15:46.6805900,374,44\n")
    weka = tmp_path / "session.txt"
    weka.write_text(json.dumps({"id": "s", "block_size": 64, "requests": [{"t": 0, "in": 64, "out": 1, "hash_ids": [1]}]}, indent=1))
    plain = tmp_path / "notes.jsonl"
    plain.write_text("hello\n")
    assert [format_of_path(str(p)) for p in (moon, azure, weka)] == ["mooncake", "azure", "weka"]
    assert format_of_path(str(plain)) == "mooncake"  # content says nothing: the name decides
    assert format_of_path(str(tmp_path)) == "weka"  # a directory of sessions
    assert guess_format(str(moon)) == "mooncake"


@needs_data
def test_the_real_traces_are_recognised_by_their_content(tmp_path):
    for src, fmt in ((MOONCAKE, "mooncake"), (AZURE, "azure"), (next(WEKA.glob("*.json")), "weka")):
        copy = tmp_path / f"{fmt}.dat"
        copy.write_bytes(src.read_bytes()[:65536])
        assert format_of_path(str(copy)) == fmt
