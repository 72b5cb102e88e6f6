"""MetadataStore against an independent model: every mutation, flush, snapshot, crash, recover.

A hypothesis state machine drives random interleavings; after every step the store's state
must equal the model's (P3), and after a crash + recover it must equal the model as of the
last acknowledged flush (P1 + P2: nothing acknowledged lost, nothing unacknowledged invented).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kvtui.store import LogLocked, MetadataStore, RecoveryError, StoreCrashed
from kvtui.store.state import digest_of
from storetest_support import (SCALE, History, Model, build_log, data_end, do, random_op,
                               segments, snapshots, write_at)


class StoreMachine(RuleBasedStateMachine):
    """Random ops with flushes, snapshots, crashes and clean reopens, checked against a Model."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="kvtui-sm-")
        self.rng = random.Random(0)

    @initialize(policy=st.sampled_from(["always", "batch", "never"]),
                segment_bytes=st.sampled_from([4096, 1 << 20]))
    def start(self, policy, segment_bytes):
        self.policy = policy
        self.store = MetadataStore.open(self.dir, fsync=policy, snapshot_every=0,
                                        batch_records=1 << 20, segment_bytes=segment_bytes)
        self.model = Model()
        self.durable = Model()

    @rule(seed=st.integers(0, 2**32), n=st.integers(1, 25))
    def mutate(self, seed, n):
        rng = random.Random(seed)
        for _ in range(n):
            op = random_op(rng, self.model, keyspace=60)
            do(self.store, op)
            self.model.apply(op)
        if self.policy == "always":
            self.durable = self.model.copy()

    @rule()
    def flush(self):
        self.store.flush()
        self.durable = self.model.copy()

    @rule()
    def snapshot(self):
        self.store.snapshot()
        self.durable = self.model.copy()
        assert len(snapshots(self.dir)) <= 2

    @rule()
    def crash_and_recover(self):
        self.store.crash()
        with pytest.raises(StoreCrashed):
            self.store.route_session("x", "node-a")
        rep = self.store.recover()
        assert rep.sound, rep.damage
        self.model = self.durable.copy()

    @rule()
    def close_and_reopen(self):
        self.store.close()
        self.store = MetadataStore.open(self.dir, fsync=self.policy, snapshot_every=0,
                                        batch_records=1 << 20, segment_bytes=4096)
        assert self.store.last_report.sound
        self.durable = self.model.copy()

    @invariant()
    def matches_model(self):
        if hasattr(self, "store"):
            assert self.store.state() == self.model.plain()
            assert self.store.digest() == self.model.digest()

    def teardown(self):
        if hasattr(self, "store"):
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=40 * SCALE, stateful_step_count=30,
                                     deadline=None, database=None)


def test_every_mutation_is_one_op_and_state_is_a_function_of_the_log(tmp_path):
    s = MetadataStore.open(tmp_path / "w", snapshot_every=0)
    s.register_node("a", 100)
    s.register_node("b", 200)
    s.blocks_stored("a", [1, 2, 3], group="chat")
    s.blocks_stored("b", (2, 3, 4), group="rag")
    s.blocks_evicted("a", [2, 99])
    s.route_session("s1", "b")
    s.set_node_up("a", False)
    s.node_cleared("b")
    assert s.nodes_for(3) == ("a",) and s.group_of(3) == "chat"
    assert s.nodes_for(4) == () and s.group_of(4) is None
    assert s.session_node("s1") == "b"
    assert s.node("a") == {"kv_blocks": 100, "up": False, "blocks_held": 2, "evicted": 1}
    assert s.keys_on("a") == {1, 3}
    s.flush()
    d = s.digest()
    s.close()
    again = MetadataStore.open(tmp_path / "w")
    assert again.digest() == d and again.last_report.records_replayed == 8
    assert again.wal_stats() == {"records": 0, "bytes": 0, "snapshots": 0, "recoveries": 0}
    again.close()


def test_digest_is_canonical_not_insertion_ordered(tmp_path):
    a = MetadataStore.open(tmp_path / "a", snapshot_every=0)
    b = MetadataStore.open(tmp_path / "b", snapshot_every=0)
    for n in ("x", "y"):
        a.register_node(n, 8)
    for n in ("y", "x"):
        b.register_node(n, 8)
    a.blocks_stored("x", [1, 2], "g")
    a.blocks_stored("y", [2], "g")
    b.blocks_stored("y", [2], "g")
    b.blocks_stored("x", [1, 2], "g")
    a.route_session("s", "x")
    b.route_session("s", "x")
    assert a.digest() == b.digest()
    b.route_session("s", "y")
    assert a.digest() != b.digest()
    a.close()
    b.close()


def test_single_writer_lock(tmp_path):
    s = MetadataStore.open(tmp_path / "w")
    with pytest.raises(LogLocked):
        MetadataStore.open(tmp_path / "w")
    s.crash()  # a dead process releases its lock
    s.recover()
    s.close()
    MetadataStore.open(tmp_path / "w").close()


def test_crash_drops_exactly_the_unacknowledged_ops(tmp_path):
    for policy in ("always", "batch", "never"):
        s = MetadataStore.open(tmp_path / policy, fsync=policy, snapshot_every=0)
        s.register_node("a", 10)
        s.blocks_stored("a", [1, 2], "g")
        s.flush()
        acked = s.digest()
        s.blocks_stored("a", [3], "g")
        s.route_session("s", "a")
        s.crash()
        rep = s.recover()
        if policy == "always":  # every op was acknowledged when it returned
            assert s.nodes_for(3) == ("a",) and s.session_node("s") == "a"
        else:
            assert s.digest() == acked and rep.records_replayed == 2
        s.close()


def test_auto_seal_every_batch_records(tmp_path):
    s = MetadataStore.open(tmp_path / "w", batch_records=10, snapshot_every=0)
    for i in range(35):
        s.route_session(f"s{i}", "n")
    assert s.acked_seq == 3 and s.pending_records == 5
    s.crash()
    s.recover()
    assert len(s.state()["sessions"]) == 30
    s.close()


def test_snapshots_bound_recovery_and_disk_whatever_the_history(tmp_path):
    """With snapshots, the log kept (and replayed) stays within ~2 snapshot intervals."""
    rng = random.Random(5)
    s = MetadataStore.open(tmp_path / "w", snapshot_every=500, segment_bytes=1 << 16)
    model = Model()
    replayed = []
    for _round in range(6):
        for _ in range(1500):
            op = random_op(rng, model, keyspace=200)
            model.apply(op)
            do(s, op)
        s.flush()
        assert len(snapshots(s.directory)) <= 2
        s.crash()
        rep = s.recover()
        assert rep.snapshot_used is not None and s.digest() == model.digest()
        replayed.append(rep.records_replayed)
    assert max(replayed) < 500 + 4096  # one interval (+ a batch), not the whole history
    # snapshots are taken at seal points (here: each flush), so one per round
    assert s.wal_stats()["recoveries"] == 6 and s.wal_stats()["snapshots"] == 6
    kept = sum(os.path.getsize(os.path.join(s.directory, n)) for n in segments(s.directory))
    assert kept < 4 * (1 << 16) + 200_000
    s.close()


def test_strict_mode_refuses_any_damage_and_touches_nothing(tmp_path):
    d = tmp_path / "w"
    s = MetadataStore.open(d, snapshot_every=0)
    h = History()
    build_log(s, random.Random(1), 5, h)
    s.close()
    seg = os.path.join(d, segments(str(d))[-1])
    write_at(seg, data_end(seg), b"\x01\x02\x03")  # a torn tail
    before = open(seg, "rb").read()
    with pytest.raises(RecoveryError) as e:
        MetadataStore.open(d, mode="strict")
    assert e.value.report.damage[0].kind == "torn_tail"
    assert open(seg, "rb").read() == before
    s = MetadataStore.open(d)  # point in time repairs it
    assert s.digest() == h.digests[-1]
    assert s.last_report.bytes_truncated == 3 and not s.last_report.suspected_corruption
    s.close()
    MetadataStore.open(d, mode="strict").close()


def test_bad_arguments_are_refused_before_they_reach_the_log(tmp_path):
    s = MetadataStore.open(tmp_path / "w")
    with pytest.raises(ValueError):
        s.blocks_stored("a", [-5])
    with pytest.raises(ValueError):
        s.register_node("a", -1)
    with pytest.raises(KeyError):
        s.set_node_up("ghost", True)
    s.flush()
    assert s.acked_seq == 0 and s.wal_stats()["records"] == 0
    with pytest.raises(ValueError):
        MetadataStore.open(tmp_path / "x", fsync="sometimes")
    s.close()


def test_digest_of_matches_model_semantics():
    m = Model()
    m.apply(("register", "a", 4))
    m.apply(("stored", "a", (1,), "g"))
    assert digest_of(m.plain()) == m.digest()


def test_recovery_reports_are_deterministic(tmp_path):
    """Same ops, same flushes: the same report items (wall time excluded) and digest — what the
    engine needs to put a recovery into its event stream and stay reproducible."""
    out = []
    for run in ("a", "b"):
        rng = random.Random(9)
        model = Model()
        s = MetadataStore.open(tmp_path / run, snapshot_every=300, segment_bytes=4096)
        for i in range(1230):
            op = random_op(rng, model)
            model.apply(op)
            do(s, op)
            if i % 50 == 49:
                s.flush()
        s.flush()
        s.crash()
        rep = s.recover()
        out.append((rep.as_items(), s.digest(), s.wal_stats()))
        s.close()
    assert out[0] == out[1]
    assert dict(out[0][0])["records_replayed"] > 0
