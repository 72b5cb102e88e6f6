"""Trace replay: the real Mooncake, Azure and weka files, and broken ones written here.

The real traces live in ../shared/data/traces beside the checkout; tests that need them are
skipped with a message when that directory is missing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from kvtui.errors import InputError
from kvtui.scenario.model import Arrival, Trace
from kvtui.sim.request import Request
from kvtui.sim.workload.trace import TraceWorkload, spread_ties
from kvtui.sim.workload.hashing import GOLDEN, chain_opaque, opaque_key
from kvtui.sim.workload.trace_keys import HashChain, common_prefix, covered_keys
from trace_support import AZURE, MOONCAKE, MOONCAKE_SYNTH, TRACES, WEKA, needs_data, replay  # noqa: F401

def shared_blocks(a: Request, b: Request) -> int:
    return common_prefix(list(a.block_keys), list(b.block_keys))


# --------------------------------------------------------------------------- mooncake
@needs_data
def test_mooncake_replay_keys_follow_the_hash_ids():
    _, reqs = replay("mooncake", MOONCAKE, limit=40)
    lines = [json.loads(line) for line in MOONCAKE.read_text().splitlines()[:40]]
    assert [r.id for r in reqs] == [f"req-{i}" for i in range(1, 41)]
    assert all(r.session == r.id and r.turn == 1 for r in reqs)
    for r, rec in zip(reqs, lines):
        assert r.prompt_tokens == rec["input_length"] and r.output_tokens == rec["output_length"]
        assert len(r.block_keys) == (r.prompt_tokens + r.output_tokens) // 16
    # keys are shared exactly as far as the hash ids are (32 blocks of 16 per 512-token id)
    for i in range(8):
        for j in range(i + 1, 8):
            a, b = lines[i], lines[j]
            same_ids = common_prefix(a["hash_ids"], b["hash_ids"])
            cap = min(a["input_length"], b["input_length"]) // 16
            assert shared_blocks(reqs[i], reqs[j]) == min(same_ids * 32, cap)
    assert reqs[0].group == "p0"


@needs_data
def test_mooncake_bucketed_arrivals_are_spread():
    _, reqs = replay("mooncake", MOONCAKE, limit=30)
    times = [r.arrival for r in reqs]
    assert times == sorted(times)
    assert len(set(times[:10])) == 10  # the first ten share timestamp 0 in the file
    assert times[9] < 3.0  # ...and stay inside their 3-second bucket


@needs_data
def test_mooncake_start_and_time_scale():
    _, full = replay("mooncake", MOONCAKE_SYNTH, limit=60)
    _, skipped = replay("mooncake", MOONCAKE_SYNTH, limit=20, start_s=5.0)
    _, fast = replay("mooncake", MOONCAKE_SYNTH, limit=60, time_scale=0.5)
    late = [r for r in full if r.arrival >= 5.0][:20]
    assert [r.prompt_tokens for r in skipped] == [r.prompt_tokens for r in late]
    assert [r.arrival for r in skipped] == pytest.approx([r.arrival - 5.0 for r in late])
    assert [r.arrival for r in fast] == pytest.approx([r.arrival * 0.5 for r in full])


# --------------------------------------------------------------------------- azure
@needs_data
def test_azure_replay_times_and_unique_blocks():
    _, reqs = replay("azure", AZURE, limit=100)
    assert len(reqs) == 100
    assert reqs[0].arrival == 0.0
    assert reqs[1].arrival == pytest.approx(50.9951690 - 46.6805900)  # from the first two rows
    assert (reqs[0].prompt_tokens, reqs[0].output_tokens) == (374, 44)
    keys = [k for r in reqs for k in r.block_keys]
    assert len(keys) == len(set(keys)) > 0
    assert all(len(r.block_keys) == (r.prompt_tokens + r.output_tokens) // 16 for r in reqs)


# --------------------------------------------------------------------------- weka
@needs_data
def test_weka_conversations_start_by_the_arrival_process_and_keep_their_gaps():
    _, reqs = replay("weka", WEKA, limit=40, arrival=Arrival(rate=0.05), time_scale=0.1)
    assert len(reqs) == 40
    names = sorted(p.stem for p in WEKA.glob("*.json"))
    firsts = [r.session for r in reqs if r.turn == 1]
    assert firsts == names[: len(firsts)]  # cycling through the files in name order
    doc = json.loads((WEKA / "trace_0008.json").read_text())
    mine = [r for r in reqs if r.session == "trace_0008"]
    for turn, (before, after) in enumerate(zip(mine, mine[1:]), start=1):
        rec_before, rec_after = doc["requests"][turn - 1], doc["requests"][turn]
        assert after.prompt_tokens == rec_after["in"]
        due = max(mine[0].arrival + rec_after["t"] * 0.1, before.arrival + 1.0 + rec_after["think_time"] * 0.1)
        assert after.arrival == pytest.approx(due)
        same_ids = common_prefix(rec_before["hash_ids"], rec_after["hash_ids"])
        assert shared_blocks(before, after) == min(same_ids * 4, rec_before["in"] // 16)


@needs_data
def test_weka_files_do_not_share_keys_even_with_equal_ids():
    _, reqs = replay("weka", WEKA, limit=3, arrival=Arrival(rate=1.0))
    a, b = [r for r in reqs if r.turn == 1][:2]
    assert a.session != b.session
    assert not set(a.block_keys) & set(b.block_keys)


def write_weka(path: Path, requests: list, **top) -> Path:
    path.write_text(json.dumps({"id": path.stem, "block_size": 64, "requests": requests, **top}))
    return path


def weka_turn(t, n_in, ids, out=10, think=0.0):
    return {"t": t, "type": "n", "in": n_in, "out": out, "hash_ids": ids, "think_time": think}


def test_weka_replays_of_one_file_are_separate_conversations(tmp_path):
    f = write_weka(tmp_path / "solo.json", [weka_turn(0, 256, [1, 2, 3, 4]), weka_turn(5, 320, [1, 2, 3, 4, 5])])
    wl, reqs = replay("weka", f, limit=4, arrival=Arrival(process="closed_loop", users=1), copies=3)
    assert [(r.session, r.turn) for r in reqs] == [("solo", 1), ("solo", 2), ("solo#2", 1), ("solo#2", 2)]
    first, again = [r for r in reqs if r.turn == 1]
    assert not set(first.block_keys) & set(again.block_keys)
    assert "1 conversation(s) x 3 copies = 3 (2 replayed as copies" in wl.notes()[0]


def test_weka_plays_each_conversation_once_unless_copies_are_asked_for(tmp_path):
    """Copies used to start silently without end; with a limit above the trace's own requests,
    the replay now ends with the trace."""
    f = write_weka(tmp_path / "solo.json", [weka_turn(0, 256, [1, 2, 3, 4]), weka_turn(5, 320, [1, 2, 3, 4, 5])])
    wl, reqs = replay("weka", f, limit=50, arrival=Arrival(rate=10.0))
    assert [(r.session, r.turn) for r in reqs] == [("solo", 1), ("solo", 2)]
    assert wl.total_requests == 2
    _, reqs = replay("weka", f, arrival=Arrival(rate=10.0), copies=2)
    assert [r.session for r in reqs].count("solo#2") == 2


def test_weka_subagents_are_flattened_into_the_timeline(tmp_path):
    requests = [
        weka_turn(0, 128, [1, 2]),
        {
            "t": 10,
            "type": "subagent",
            "agent_id": "x",
            "requests": [weka_turn(0, 128, [7, 8]), weka_turn(4, 192, [7, 8, 9])],
        },
        weka_turn(30, 256, [1, 2, 3, 4]),
    ]
    f = write_weka(tmp_path / "agent.json", requests)
    _, reqs = replay("weka", f, limit=4, arrival=Arrival(process="closed_loop", users=1), delay=0.5)
    assert [r.prompt_tokens for r in reqs] == [128, 128, 192, 256]
    start = reqs[0].arrival
    assert [round(r.arrival - start, 6) for r in reqs] == [0, 10, 14, 30]  # sub-agent clock shifted to its t
    assert {r.session for r in reqs} == {"agent"}
    assert shared_blocks(reqs[1], reqs[2]) == 128 // 16  # the sub-agent's own prefix


def test_weka_rejected_turn_ends_the_conversation(tmp_path):
    f = write_weka(tmp_path / "c.json", [weka_turn(i, 64 * (i + 1), list(range(1, i + 2))) for i in range(5)])
    arrival = Arrival(process="closed_loop", users=1)
    _, reqs = replay("weka", f, limit=5, arrival=arrival, reject=lambda r: r.turn == 2, copies=5)
    assert [(r.session, r.turn) for r in reqs] == [("c", 1), ("c", 2), ("c#2", 1), ("c#2", 2), ("c#3", 1)]
    wl, reqs = replay("weka", f, arrival=arrival, reject=lambda r: r.turn == 2, copies=2)
    assert len(reqs) == 4 and wl.turns_cut == 6  # the records given (10) minus the arrived: said, not silent
    assert "6 later turn(s) of 2 conversation(s) not sent" in wl.notes()[-1]


def test_weka_turns_a_rejection_cut_are_counted(tmp_path):
    """Every request of the trace is sent or counted as cut (issue 25: they were dropped unseen)."""
    f = write_weka(tmp_path / "c.json", [weka_turn(i, 64 * (i + 1), list(range(1, i + 2))) for i in range(5)])
    arrival = Arrival(process="closed_loop", users=1)
    wl, reqs = replay("weka", f, arrival=arrival, reject=lambda r: r.turn == 2, copies=3)
    assert len(reqs) == 6 and wl.turns_cut == 9
    assert len(reqs) + wl.turns_cut == wl.total_requests == 15


@pytest.mark.parametrize("bs", [16, 48, 64, 128, 200])
def test_covered_keys_any_block_size(bs):
    chain = HashChain(b"t")
    ids_a, ids_b = [1, 2, 3, 4, 5, 6], [1, 2, 3, 9, 10, 11]
    a = covered_keys(ids_a, 64, 6 * 64, bs, chain)
    b = covered_keys(ids_b, 64, 6 * 64 - 10, bs, chain)
    assert len(a) == 6 * 64 // bs and len(b) == (6 * 64 - 10) // bs
    assert len(set(a)) == len(a)
    assert common_prefix(a, b) == 3 * 64 // bs  # equal through the third hash block, no further
    assert covered_keys(ids_a, 64, 6 * 64, bs, HashChain(b"t")) == a  # a pure function of the ids
    assert not set(covered_keys(ids_a, 64, 6 * 64, bs, HashChain(b"other"))) & set(a)


def splitmix_finaliser(x: int) -> int:
    """mix64 of one value, in Python ints (the reference for the vectorised keys)."""
    m = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


@pytest.mark.parametrize("bs, hash_block", [(16, 512), (16, 64), (64, 64), (32, 512), (48, 64), (200, 64), (1, 64)])
def test_covered_keys_follow_their_definition_block_by_block(bs, hash_block):
    """Whole hash blocks (one broadcast sum) and blocks spanning them (indexed) give each block the
    key of the hash block its last token is in, mixed with its end offset there."""
    rng = np.random.default_rng(bs)
    chain = HashChain(b"t")
    for _ in range(20):
        ids = rng.integers(0, 2**63, rng.integers(1, 12)).tolist()
        prompt = int(rng.integers(0, (len(ids) + 1) * hash_block))
        got = covered_keys(ids, hash_block, prompt, bs, chain)
        hashed = HashChain(b"t").keys(ids)
        ends = range(bs, min(prompt, len(ids) * hash_block) + 1, bs)
        want = [splitmix_finaliser((hashed[(e - 1) // hash_block] + (e - (e - 1) // hash_block * hash_block) * GOLDEN) & ((1 << 64) - 1)) for e in ends]
        assert got == want


def test_opaque_key_is_the_chained_blake2b_digest():
    """One hasher call over the parent's key and the payload: the digest of both fed in turn."""
    h = hashlib.blake2b(digest_size=8)
    h.update((2**64 - 5).to_bytes(8, "little"))
    h.update(b"salt" + (7).to_bytes(8, "little"))
    assert opaque_key(7, 2**64 - 5, b"salt") == int.from_bytes(h.digest(), "little")
    assert chain_opaque([7, -1], None, b"s") == [opaque_key(7, None, b"s"), opaque_key(2**64 - 1, opaque_key(7, None, b"s"), b"s")]


def test_common_prefix_and_spread_ties():
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3, 4, 5], [1, 2, 7, 4, 5]) == 2
    assert common_prefix([], [1]) == 0
    assert spread_ties([0, 0, 0, 3, 3, 6]) == [0, 1, 2, 3, 4.5, 6]
    # a tie before a long silence is spread over the typical (median) gap, not the silence
    assert spread_ties([0, 0, 3, 3, 100, 101]) == [0, 1.5, 3, 4.5, 100, 101]


# --------------------------------------------------------------------------- broken traces
def problems_of(fmt: str, path) -> list[tuple]:
    with pytest.raises(InputError) as err:
        TraceWorkload(Trace(format=fmt, path=str(path)), Arrival(), 16, np.random.default_rng(0))
    return err.value.problems


GOOD = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}


def jsonl(*records) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


@pytest.mark.parametrize(
    "bad, message",
    [
        ('{"timestamp": 0, "input_length": 600,', "not valid JSON"),
        ({"timestamp": 0, "output_length": 5, "hash_ids": [1, 2]}, "missing field 'input_length'"),
        ({**GOOD, "input_length": -3}, "input_length: must be >= 1"),
        ({**GOOD, "output_length": 2.5}, "output_length: expected a whole number"),
        ({**GOOD, "hash_ids": [1, 2, 3]}, "hash_ids: 3 ids for input_length 600"),
        ({**GOOD, "hash_ids": [1, "x"]}, "hash_ids: expected a list"),
        ({**GOOD, "timestamp": "soon"}, "timestamp: expected a number"),
        ('[1, 2]', "expected a JSON object"),
    ],
)
def test_broken_mooncake_line_is_reported_with_its_line(tmp_path, bad, message):
    f = tmp_path / "t.jsonl"
    # line 1 good, line 2 blank (still counted), line 3 good, line 4 broken
    f.write_text(jsonl(GOOD, "", {**GOOD, "timestamp": 10}, bad, {**GOOD, "timestamp": 20}))
    problems = problems_of("mooncake", f)
    assert len(problems) == 1
    path, line, text = problems[0]
    assert (path, line) == (str(f), 4)
    assert message in text


def test_mooncake_time_must_not_go_backwards(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl({**GOOD, "timestamp": 50}, {**GOOD, "timestamp": 10}))
    [(_, line, text)] = problems_of("mooncake", f)
    assert line == 2 and "earlier" in text


def test_every_broken_line_is_listed(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl(GOOD, "nope", GOOD, "{", GOOD))
    assert [line for _, line, _ in problems_of("mooncake", f)] == [2, 4]


def test_missing_trace_names_the_path(tmp_path):
    for fmt in ("mooncake", "azure", "weka"):
        [(path, line, text)] = problems_of(fmt, tmp_path / "absent.file")
        assert path == str(tmp_path / "absent.file") and line is None and "not found" in text


def test_a_directory_where_a_file_belongs(tmp_path):
    [(path, _, text)] = problems_of("mooncake", tmp_path)
    assert path == str(tmp_path) and "directory" in text
    [(path, _, text)] = problems_of("weka", tmp_path)  # an empty directory of sessions
    assert "no weka session files" in text


@pytest.mark.parametrize(
    "row, message",
    [
        ("2023-11-16 18:15:47.1,12", "expected 3 columns"),
        ("yesterday,12,3", "TIMESTAMP: expected"),
        ("2023-11-16 18:15:47.1,12.5,3", "ContextTokens: expected a whole number"),
        ("2023-11-16 18:15:47.1,12,-1", "GeneratedTokens: must be >= 0"),
        ("2023-11-16 18:15:40.0,12,3", "earlier than the record before"),
    ],
)
def test_broken_azure_row(tmp_path, row, message):
    f = tmp_path / "a.csv"
    f.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        f"{row}\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
    )
    [(path, line, text)] = problems_of("azure", f)
    assert (path, line) == (str(f), 3)
    assert message in text


def test_azure_crosses_midnight(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("2023-11-16 23:59:59.5,100,10\n2023-11-17 00:00:00.25,100,10\n")
    _, reqs = replay("azure", f)
    assert reqs[1].arrival == pytest.approx(0.75)


def test_broken_weka_files(tmp_path):
    bad_json = tmp_path / "a.json"
    bad_json.write_text('{"id": "a",\n "requests": [\n {"t": 0, "in": }\n]}')
    [(path, line, text)] = problems_of("weka", bad_json)
    assert (path, line) == (str(bad_json), 3) and "not valid JSON" in text

    missing = write_weka(tmp_path / "b.json", [weka_turn(0, 128, [1, 2]), {"t": 5, "out": 3, "hash_ids": []}])
    [(path, line, text)] = problems_of("weka", missing)
    assert (path, line) == (str(missing), 1)
    assert text == "requests[1]: missing field 'in'"

    too_many = write_weka(tmp_path / "c.json", [weka_turn(0, 100, [1, 2, 3])])
    [(_, _, text)] = problems_of("weka", too_many)
    assert "hash_ids: 3 blocks of 64 tokens" in text


def test_limit_caps_requests(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl(*({**GOOD, "timestamp": 1000 * i} for i in range(10))))
    wl, reqs = replay("mooncake", f, limit=4)
    assert len(reqs) == 4 and wl.requests_issued == 4


# --------------------------------------------------------------------------- nothing dropped silently
@pytest.mark.parametrize(
    "bad, message",
    [
        ('{"timestamp": NaN, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}', "finite"),
        ('{"timestamp": Infinity, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}', "finite"),
        ({**GOOD, "timestamp": -5}, "timestamp: must be >= 0"),
        ({**GOOD, "output_length": 10**12}, "output_length: must be <= 10,000,000"),
        ({**GOOD, "hash_ids": [1, 2**64]}, "hash_ids: expected a list of whole numbers in [0, 2**63)"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        ({**GOOD, "timestamp": 1e300}, "timestamp: must be <="),
    ],
)
def test_impossible_mooncake_records_are_errors_with_their_line(tmp_path, bad, message):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl({**GOOD, "timestamp": 10}, bad, {**GOOD, "timestamp": 20}))
    [(path, line, text)] = problems_of("mooncake", f)
    assert (path, line) == (str(f), 2)
    assert message in text


def test_skip_invalid_skips_and_counts(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl(GOOD, {**GOOD, "timestamp": float("nan")}.__repr__(), {**GOOD, "timestamp": 2000},
                       {**GOOD, "timestamp": 1000}, {**GOOD, "output_length": 10**12, "timestamp": 3000},
                       {**GOOD, "timestamp": 4000}))
    wl, reqs = replay("mooncake", f, skip_invalid=True)
    assert [r.arrival for r in reqs] == [0.0, 2.0, 4.0]  # the bad line, the one going back, the huge one
    assert wl.skipped == 3
    assert "skipped 3 invalid record(s)" in wl.notes()[0]


def test_a_trace_cut_short_by_its_limit_is_not_read_further(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl(GOOD, {**GOOD, "timestamp": 1000}, "broken"))
    wl, reqs = replay("mooncake", f, limit=2)
    assert len(reqs) == 2 and wl.total_requests == 2


@pytest.mark.parametrize(
    "fmt, text",
    [
        ("mooncake", ""),
        ("mooncake", "\n\n  \n"),
        ("azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n"),
        ("azure", ""),
    ],
)
def test_empty_and_header_only_traces_are_errors(tmp_path, fmt, text):
    f = tmp_path / "t.trace"
    f.write_text(text)
    [(path, _, message)] = problems_of(fmt, f)
    assert path == str(f) and "no requests in this trace" in message


def test_everything_skipped_is_still_an_error(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl("nope", "{"))
    with pytest.raises(InputError) as err:
        TraceWorkload(Trace(format="mooncake", path=str(f), skip_invalid=True), Arrival(), 16, np.random.default_rng(0))
    assert "all 2 records were invalid and skipped" in err.value.render()


def test_start_past_the_end_is_an_error(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(jsonl(GOOD, {**GOOD, "timestamp": 1000}))
    with pytest.raises(InputError, match="no requests at or after start_s=5"):
        TraceWorkload(Trace(format="mooncake", path=str(f), start_s=5), Arrival(), 16, np.random.default_rng(0))


def test_azure_impossible_rows(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text(
        "2023-11-16 18:15:46.1,374,44\n"
        "2023-11-16 18:15:47.1,12,1000000000000\n"
        "2023-11-16 18:15:nan,12,3\n"
        "2023-11-16 25:15:47.1,12,3\n"
    )
    problems = problems_of("azure", f)
    assert [line for _, line, _ in problems] == [2, 3, 4]
    assert "GeneratedTokens: must be <= 10,000,000" in problems[0][2]


def test_every_weka_problem_has_its_line_in_a_pretty_printed_file(tmp_path):
    f = tmp_path / "p.json"
    doc = {
        "id": "p",
        "block_size": 64,
        "requests": [
            weka_turn(0, 128, [1, 2]),
            {"t": 3, "type": "subagent", "requests": [weka_turn(0, 64, [5]), weka_turn(1, 64, [5], out=10**12)]},
            weka_turn(float("nan"), 128, [1, 2]),
            weka_turn(2, 128, [1, 2]),
        ],
    }
    text = json.dumps(doc, indent=2)
    f.write_text(text)
    problems = problems_of("weka", f)
    lines = text.splitlines()
    assert [msg.split(":")[0] for _, _, msg in problems] == ["requests[1].requests[1]", "requests[2]", "requests[3]"]
    for (_, line, msg), needle in zip(problems, ['"t": 1,', '"t": NaN', '"t": 2,']):
        assert line is not None and needle in lines[line], (line, msg)  # the line after the object's brace
    assert "out: must be <= 10,000,000" in problems[0][2]
    assert "t: expected a finite number" in problems[1][2]
    assert "earlier than the request before" in problems[2][2]


def test_weka_nested_too_deep_and_skip_invalid(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"requests": [\n' + "[" * 5000 + "]" * 5000 + "\n]}")
    [(_, line, text)] = problems_of("weka", deep)
    assert line == 2 and "nested too deeply" in text
    mixed = write_weka(tmp_path / "m.json", [weka_turn(0, 128, [1, 2]), weka_turn(1, -4, [1]), weka_turn(2, 192, [1, 2, 3])])
    wl, reqs = replay("weka", mixed, skip_invalid=True)
    assert [r.prompt_tokens for r in reqs] == [128, 192] and wl.skipped == 1
    empty = write_weka(tmp_path / "e.json", [])
    [(_, _, text)] = problems_of("weka", empty)
    assert "no requests" in text


# --------------------------------------------------------------------------- the trace scenarios
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
TRACE_SCENARIOS = ["mooncake-conversation", "mooncake-synthetic", "azure-conv", "azure-code", "agentic"]


@pytest.mark.parametrize("name", TRACE_SCENARIOS)
def test_trace_scenario_without_its_data_fails_with_file_and_line(tmp_path, capsys, name):
    from kvtui.cli import main

    text = (SCENARIOS / f"{name}.yaml").read_text()
    assert "licence" in text and "Source:" in text
    copy = tmp_path / f"{name}.yaml"  # beside no shared/data: the relative path finds nothing
    copy.write_text(text)
    for command in ("validate", "run"):
        assert main([command, str(copy)]) == 2
        err = capsys.readouterr().err
        line = next(i for i, row in enumerate(text.splitlines(), start=1) if row.strip().startswith("path:"))
        assert err.startswith(f"{copy}:{line}: workload.trace.path: trace ") and "not found" in err


@needs_data
@pytest.mark.parametrize("name", TRACE_SCENARIOS)
def test_trace_scenarios_validate(capsys, name):
    from kvtui.cli import main

    assert main(["validate", str(SCENARIOS / f"{name}.yaml")]) == 0
    if name == "agentic":
        assert "12 conversation(s) x 1 copy = 12" in capsys.readouterr().out


def test_validate_and_run_report_skipped_records(tmp_path, capsys):
    from kvtui.cli import main

    (tmp_path / "t.jsonl").write_text(jsonl(GOOD, "garbage", {**GOOD, "timestamp": 1000}))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: skip\ncluster: {nodes: [{name: a, kv_blocks: 512}]}\n"
        "workload:\n  trace: {format: mooncake, path: t.jsonl, skip_invalid: true}\n"
    )
    assert main(["validate", str(scenario)]) == 0
    assert "skipped 1 invalid record(s)" in capsys.readouterr().out
    assert main(["run", str(scenario)]) == 0
    assert "skipped 1 invalid record(s)" in capsys.readouterr().err
    scenario.write_text(scenario.read_text().replace(", skip_invalid: true", ""))
    assert main(["validate", str(scenario)]) == 2
    assert f"{tmp_path / 't.jsonl'}:2: not valid JSON" in capsys.readouterr().err


def test_a_request_past_the_request_limit_is_refused_at_its_line(tmp_path):
    """issue 20: 300 x 9,999,999-token requests passed validate and died of memory; a request
    is held whole, so the trace readers refuse one past MAX_REQUEST_TOKENS (azure, mooncake, weka)."""
    azure = tmp_path / "a.csv"
    azure.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     + "".join(f"2023-11-16 18:15:{i:02d}.000,9999999,10\n" for i in range(3)))
    assert [(line, "longer than the limit of 4,194,304" in text) for _, line, text in problems_of("azure", azure)] == [
        (2, True), (3, True), (4, True)]
    huge = -(-4_194_300 // 512)
    moon = tmp_path / "m.jsonl"
    moon.write_text(jsonl(GOOD, {**GOOD, "timestamp": 5, "input_length": 4_194_300, "output_length": 10, "hash_ids": list(range(huge))}))
    assert [line for _, line, _ in problems_of("mooncake", moon)] == [2]
    weka = write_weka(tmp_path / "w.json", [weka_turn(0, 100, [1]), weka_turn(1, 4_194_300, [1], out=100)])
    assert any("longer than the limit" in text for _, _, text in problems_of("weka", weka))


@pytest.mark.parametrize("prefix, newline", [(b"", b"\r\n"), (b"\xef\xbb\xbf", b"\n"), (b"\xef\xbb\xbf", b"\r\n")])
def test_crlf_and_bom_traces_read_like_plain_ones(tmp_path, prefix, newline):
    lines = [json.dumps({**GOOD, "timestamp": t}).encode() for t in (0, 10, 20)]
    plain, odd = tmp_path / "p.jsonl", tmp_path / "o.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    odd.write_bytes(prefix + newline.join(lines) + newline)

    def times(path):
        return TraceWorkload(Trace(format="mooncake", path=str(path)), Arrival(), 16, np.random.default_rng(0)).times

    assert times(odd) == times(plain)
