"""The `keyed` trace format (kvtui/sim/workload/keyed.py): one key per KV block at a stated
block size; a route-mode recording's traffic is written in it for counterfactual replay."""

from __future__ import annotations

import json

import pytest

from kvtui.errors import InputError
from kvtui.scenario.trace_formats import format_of_path
from kvtui.sim.workload.keyed import KeyedReader


def _write(tmp_path, rows) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_a_keyed_trace_is_recognised_by_content_and_read_at_its_block_size(tmp_path):
    path = _write(tmp_path, [{"t": 0.5, "prompt": 9, "output": 2, "block_size": 4, "keys": [7, 8]},
                             {"t": 1.25, "prompt": 3, "output": 1, "block_size": 4, "keys": []}])
    assert format_of_path(path) == "keyed"
    reader = KeyedReader(path)
    records = list(reader.records())
    assert reader.hash_block == 4
    assert [(r.t, r.prompt, r.output, r.hash_ids) for r in records] == [(0.0, 9, 2, [7, 8]), (0.75, 3, 1, [])]


@pytest.mark.parametrize("bad, says", [
    ({"t": 1, "prompt": 9, "output": 2, "block_size": 8, "keys": [1]}, "block_size: 8, but the lines before have 4"),
    ({"t": 1, "prompt": 9, "output": 2, "block_size": 4, "keys": [1]}, "keys: 1 keys for prompt 9, expected 9 // 4 = 2"),
    ({"t": 1, "prompt": 9, "output": 2, "block_size": 4}, "keys"),
])
def test_a_bad_line_is_reported_with_its_file_and_line(tmp_path, bad, says):
    path = _write(tmp_path, [{"t": 0, "prompt": 4, "output": 1, "block_size": 4, "keys": [3]}, bad])
    with pytest.raises(InputError) as e:
        list(KeyedReader(path).records())
    assert any(p[0] == path and p[1] == 2 and says in p[2] for p in e.value.problems)
