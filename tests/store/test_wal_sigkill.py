"""Real crashes: a writer process killed with SIGKILL at random moments, cycle after cycle.

Each cycle starts `sigkill_writer.py` on the same directory. The child recovers, reports the
recovered seq and digest, then appends batches (with snapshots every 150 records and 8 KiB
segments, so kills land in rotations, snapshots and compactions too), printing every
acknowledged seq on its stdout pipe. The parent kills it after a random delay — sometimes
while it is still recovering from the previous kill — and checks at the next start:

P1 the recovered seq is at least the last seq the child acknowledged;
P2/P3 the recovered digest is the model's digest after exactly that many frames;
P5 a process kill never produces anything but a torn tail (no suspected corruption).

KVTUI_FAULT_SCALE multiplies the number of cycles (default 30).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

from kvtui.store import MetadataStore
from storetest_support import SCALE, Model, cycle_batches

HERE = os.path.dirname(os.path.abspath(__file__))
POLICIES = ("batch", "always", "never")


def test_sigkill_writer_at_random_moments(tmp_path):
    d = str(tmp_path / "wal")
    rng = random.Random(2024)
    frames: list[list[tuple]] = []  # frames[i]: the ops of the frame with seq i + 1
    checkpoints = {0: Model()}  # seq -> the model after that many frames

    def model_at(seq: int) -> Model:
        base = max(k for k in checkpoints if k <= seq)
        m = checkpoints[base].copy()
        for ops in frames[base:seq]:
            for op in ops:
                m.apply(op)
        return m

    acked = 0
    kills = interrupted_recoveries = torn = temps = 0
    cycles = 30 * SCALE
    seed = 77
    for cycle in range(cycles + 1):
        policy = POLICIES[cycle % 3]
        last = cycle == cycles
        argv = [sys.executable, os.path.join(HERE, "sigkill_writer.py"), d, str(seed),
                str(cycle), policy] + (["50"] if last else [])  # only the last one finishes
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=HERE)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(x.rstrip("\n") for x in proc.stdout))  # noqa: B023 (joined in this pass)
        reader.start()
        if not last:
            early = rng.random() < 0.2  # sometimes during start-up / recovery, before OPEN
            if not early:
                while not lines and proc.poll() is None:
                    time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.12 if early else 0.08))
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join()
        err = proc.stderr.read()
        proc.stderr.close()
        assert proc.returncode == (0 if last else -signal.SIGKILL), f"cycle {cycle}: {err}"
        if not lines or not lines[0].startswith("OPEN"):
            interrupted_recoveries += 1  # killed before it had recovered
            continue
        _, seq_s, digest, info_s = lines[0].split(" ", 3)
        seq, info = int(seq_s), json.loads(info_s)
        # P1, P2, P3 for what the previous cycles left behind
        assert seq >= acked, f"cycle {cycle}: acknowledged seq {acked} lost (recovered {seq})"
        assert seq <= len(frames), f"cycle {cycle}: recovered seq {seq} was never written"
        model = model_at(seq)
        assert digest == model.digest(), f"cycle {cycle}: state at seq {seq} differs from the model"
        assert not info["suspected"], f"cycle {cycle}: a kill caused suspected corruption {info}"
        assert set(info["damage"]) <= {"torn_tail"}, info
        torn += bool(info["damage"])
        temps += len(info["temp"])
        if last:
            assert lines[-1] == "DONE", err
        # what this cycle's child appended
        del frames[seq:]
        for k in [k for k in checkpoints if k > seq]:
            del checkpoints[k]
        checkpoints[seq] = model
        acks = [int(x.split()[2]) for x in lines[1:] if x.startswith("ACK")]
        # at most the frames of one batch past the last ACK can have been written
        # (under "always" a batch is one frame per op, each written before the next op)
        batches = list(itertools.islice(cycle_batches(seed, cycle), len(acks) + 1))
        frames.extend(batches if policy != "always" else [[op] for b in batches for op in b])
        if acks:
            assert acks[0] > seq
            acked = acks[-1]
            kills += not last
    print(f"\n{cycles} cycles: {kills} killed mid-write, {interrupted_recoveries} killed before "
          f"recovery finished; {torn} torn tails and {temps} temp files found at the next start")
    assert kills >= cycles // 2, f"only {kills} of {cycles} cycles were killed mid-write"
    s = MetadataStore.open(d)
    assert s.digest() == model_at(s.acked_seq).digest() and s.acked_seq >= acked
    s.close()
