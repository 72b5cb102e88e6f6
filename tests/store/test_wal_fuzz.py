"""Fuzzing WAL directories through the command line (issue 10): damaged, odd or hostile logs.

A real log is written, then damaged at random -- bit flips, truncations, junk appended,
segments deleted, renamed or duplicated, snapshots emptied, CURRENT rewritten, stray files and
directories, a symlink, a file where the directory should be -- and handed to `kvtui wal
inspect|verify|dump` and to `kvtui run` with `metadata.dir` pointing at it (which recovers it
point-in-time). Every outcome must be exit 0 or 2 with a message, never a traceback or a hang.
The store's own damage campaigns (test_wal_damage.py, KVTUI_FAULT_SCALE) check *what* is
recovered; this one checks that no directory, however odd, escapes the error boundary.
Size knob: KVTUI_FUZZ_SCALE.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fuzz_support import Tally, call, fuzz_settings  # noqa: E402
from storetest_support import History, build_log, flip_bit, segments, snapshots  # noqa: E402

from kvtui.store import MetadataStore  # noqa: E402

SCENARIO = {
    "name": "walfuzz",
    "latency": {"model": "linear", "prefill_ms_per_token": 0.1, "decode_ms_per_token": 0.1},
    "cluster": {"block_size": 16, "nodes": [{"name": "node-a", "kv_blocks": 64}, {"name": "node-b", "kv_blocks": 64}]},
    "workload": {"requests": 6, "groups": [{"system_prompt_tokens": 32, "question_tokens": 16, "output_tokens": 4}]},
    "metadata": {"dir": "WAL", "fsync": "never", "snapshot_every": 50},
}

DAMAGE = ["flip", "truncate", "append_junk", "delete_segment", "rename_segment", "duplicate_segment",
          "empty_snapshot", "current_junk", "delete_current", "stray_file", "stray_dir", "symlink_segment",
          "zero_file", "replace_dir_by_file", "nothing"]


def _base_log(root: Path) -> str:
    d = str(root / "base")
    h = History()
    s = MetadataStore.open(d, snapshot_every=0, segment_bytes=4096)
    build_log(s, random.Random(1), 40, h, snapshot_at=(15, 30))
    s.close()
    return d


def _damage(d: str, kind: str, rng: random.Random) -> None:
    segs, snaps = segments(d), snapshots(d)
    files = [n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))]
    pick = lambda names: os.path.join(d, rng.choice(names)) if names else None  # noqa: E731
    if kind == "flip" and (p := pick(files)) and os.path.getsize(p):
        flip_bit(p, rng.randrange(os.path.getsize(p)), rng.randrange(8))
    elif kind == "truncate" and (p := pick(files)):
        os.truncate(p, rng.randrange(os.path.getsize(p) + 1))
    elif kind == "append_junk" and (p := pick(files)):
        with open(p, "ab") as f:
            f.write(rng.randbytes(rng.randrange(1, 700)))
    elif kind == "delete_segment" and (p := pick(segs)):
        os.unlink(p)
    elif kind == "rename_segment" and (p := pick(segs)):
        os.rename(p, os.path.join(d, f"wal-{rng.randrange(100):08d}.log"))
    elif kind == "duplicate_segment" and (p := pick(segs)):
        shutil.copy(p, os.path.join(d, f"wal-{rng.randrange(100):08d}.log"))
    elif kind == "empty_snapshot" and (p := pick(snaps)):
        open(p, "wb").close()
    elif kind == "current_junk":
        with open(os.path.join(d, "CURRENT"), "wb") as f:
            f.write(rng.randbytes(rng.randrange(0, 64)))
    elif kind == "delete_current" and os.path.exists(os.path.join(d, "CURRENT")):
        os.unlink(os.path.join(d, "CURRENT"))
    elif kind == "stray_file":
        with open(os.path.join(d, rng.choice(["x.tmp", "snap-junk.snap", "wal-abc.log", "notes", "CURRENT.tmp"])), "wb") as f:
            f.write(rng.randbytes(rng.randrange(0, 100)))
    elif kind == "stray_dir":
        os.makedirs(os.path.join(d, rng.choice(["quarantine", "wal-00000099.log", "sub"])), exist_ok=True)
    elif kind == "symlink_segment" and segs:
        target = os.path.join(d, f"wal-{rng.randrange(100):08d}.log")
        if not os.path.exists(target):
            os.symlink(rng.choice(["/nonexistent", "/dev/null", os.path.join(d, segs[0])]), target)
    elif kind == "zero_file" and (p := pick(files)):
        with open(p, "r+b") as f:
            f.write(bytes(os.path.getsize(p)))
    elif kind == "replace_dir_by_file":
        shutil.rmtree(d)
        with open(d, "wb") as f:
            f.write(b"not a directory")


def test_fuzz_wal_directories(tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tally = Tally("wal_directories")
    root = tmp_path_factory.mktemp("walfuzz")
    base = _base_log(root)

    @fuzz_settings(20)
    @given(st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
    def check(kinds, seed):
        rng = random.Random(seed)
        work = tmp_path_factory.mktemp("w")
        d = str(work / "WAL")
        shutil.copytree(base, d, ignore=shutil.ignore_patterns("LOCK"))
        for kind in kinds:
            if os.path.isdir(d):
                try:
                    _damage(d, kind, rng)
                except OSError:
                    pass  # damage that does not apply to this directory (a stray dir in the way)
        for command in (["wal", "verify", d], ["wal", "inspect", d, "--json"], ["wal", "dump", d]):
            out = call(command, seconds=60)
            tally.add(out.kind)
            assert out.kind in ("ok", "refused"), f"{kinds} seed {seed}: {command}: {out.describe()}"
        scenario = work / "s.yaml"
        scenario.write_text(yaml.safe_dump({**SCENARIO, "metadata": {**SCENARIO["metadata"], "dir": d}}))
        out = call(["run", str(scenario)], seconds=60)
        tally.add(out.kind)
        assert out.kind in ("ok", "refused"), f"{kinds} seed {seed}: run: {out.describe()}"

    try:
        check()
    finally:
        tally.write()
