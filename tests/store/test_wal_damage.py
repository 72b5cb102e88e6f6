"""Damage planted in the files: truncations, torn sectors, bit flips, frame and segment surgery.

Each test checks properties, not just "no exception":
P2/P3 the recovered digest is the model's digest after some prefix of the frames (and which
      prefix is pinned down where the damage allows it);
P4    recovering again changes nothing (same digest, nothing new found);
P5    `kvtui wal verify` exits 2 before the repair and the report lists the damage, flagging
      suspected corruption whenever the damage is not a clean torn tail.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from kvtui.errors import InputError
from kvtui.store import MetadataStore
from kvtui.store import frame as fr
from kvtui.store import segment as sg
from kvtui.store import snapshot as sn
from kvtui.cli.wal import main as wal_main
from storetest_support import (SCALE, History, build_log, clone, data_end, do, flip_bit,
                               frame_offsets, random_batches, segments, snapshots)


def make_log(path, frames=30, *, seed=1, segment_bytes=1 << 20, snapshot_at=()):
    h = History()
    s = MetadataStore.open(path, snapshot_every=0, segment_bytes=segment_bytes)
    build_log(s, random.Random(seed), frames, h, snapshot_at=snapshot_at)
    s.close()
    return str(path), h


def verify_code(d) -> int:
    try:
        return wal_main(["verify", str(d)])
    except InputError:
        return 2


def reopen(d, h, *, seq=None, suspected=None, kinds=None):
    """Open, check the outcome against the history, check P4, return (seq, report)."""
    s = MetadataStore.open(d, snapshot_every=0, segment_bytes=4096)
    rep = s.last_report
    got = h.seq_of(s.digest())
    assert got is not None, "recovered state is not the model of any prefix (P2/P3)"
    if seq is not None:
        assert got == seq, (got, seq, rep.damage)
    if suspected is not None:
        assert rep.suspected_corruption is suspected, rep.damage
    if kinds is not None:
        assert {x.kind for x in rep.damage} >= set(kinds), rep.damage
    digest = s.digest()
    s.close()
    again = MetadataStore.open(d)  # P4: idempotent
    assert again.digest() == digest
    assert all(x.covered for x in again.last_report.damage), again.last_report.damage
    assert again.last_report.bytes_truncated == 0 and not again.last_report.quarantined
    again.close()
    return got, rep


# -- truncation --------------------------------------------------------------------------------


def test_truncation_at_every_byte_of_the_last_frames_then_append_and_reopen(tmp_path):
    d, h = make_log(tmp_path / "base", frames=8)
    seg = segments(d)[-1]
    frames = frame_offsets(os.path.join(d, seg))
    # make the last two frames small so "every byte" stays cheap
    s = MetadataStore.open(d, snapshot_every=0)
    for ops in ([("route", "s-x", "node-a")], [("register", "node-z", 7)]):
        for op in ops:
            do(s, op)
        s.flush()
        h.add_frame(ops)
    s.close()
    frames = frame_offsets(os.path.join(d, seg))
    start = frames[-3][0]
    size = data_end(os.path.join(d, seg))
    extra = random_batches(99, 1, h.model)[0]
    for cut in range(start, size + 1):
        w = clone(d, str(tmp_path / "w"))
        with open(os.path.join(w, seg), "r+b") as f:
            f.truncate(cut)
        whole = [f for f in frames if f[1] <= cut]
        expect = whole[-1][2] if whole else 0
        boundary = whole[-1][1] if whole else sg.HEADER_SIZE
        assert verify_code(w) == (2 if open(os.path.join(d, seg), "rb").read()[boundary:cut]
                                  .rstrip(sg.FILL) else 0)
        s = MetadataStore.open(w, snapshot_every=0)
        rep = s.last_report
        assert h.seq_of(s.digest()) == expect
        # trailing bytes that equal the preallocation fill byte cannot be told from fill
        torn = open(os.path.join(d, seg), "rb").read()[boundary:cut]
        assert rep.bytes_truncated == len(torn.rstrip(sg.FILL))
        assert not rep.suspected_corruption
        if torn.rstrip(sg.FILL):
            assert [x.kind for x in rep.damage] == ["torn_tail"]
            assert rep.quarantined == [f"quarantine/{seg}@{boundary}"]
        for op in extra:
            do(s, op)
        s.flush()
        s.close()
        s = MetadataStore.open(w)
        assert s.last_report.sound
        ref = h.models[expect].copy()  # the prefix up to `expect`, then the extra batch
        for op in extra:
            ref.apply(op)
        assert s.digest() == ref.digest()
        s.close()


# -- torn sectors ------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", ["zeros", "garbage"])
def test_torn_last_sector(tmp_path, fill):
    rng = random.Random(3)
    d, h = make_log(tmp_path / "base", frames=40)
    seg = segments(d)[-1]
    path = os.path.join(d, seg)
    frames = frame_offsets(path)
    size = data_end(path)
    for variant in range(4 * SCALE):
        w = clone(d, str(tmp_path / f"w{variant}"))
        p = os.path.join(w, seg)
        if variant % 2 == 0:
            # the last (partial) sector of the file comes back as zeros/garbage
            start = max(sg.HEADER_SIZE, (size - 1) // 512 * 512 - 512 * (variant // 2 % 2))
            n = size - start
        else:
            # a new frame's write was torn: the file grew by a sector of zeros/garbage
            start, n = size, 512
        blob = bytes(n) if fill == "zeros" else bytes(rng.getrandbits(8) for _ in range(n))
        with open(p, "r+b") as f:
            f.seek(start)
            f.write(blob)
        expect = max([f[2] for f in frames if f[1] <= start], default=0)
        assert verify_code(w) == 2
        got, rep = reopen(w, h, seq=expect, suspected=False, kinds=["torn_tail"])


# -- bit flips ---------------------------------------------------------------------------------


def test_random_bit_flips_are_always_reported(tmp_path):
    rng = random.Random(11)
    d, h = make_log(tmp_path / "base", frames=60, segment_bytes=4096, snapshot_at=(20, 40))
    names = segments(d) + snapshots(d) + [sg.CURRENT]
    for _trial in range(60 * SCALE):
        w = clone(d, str(tmp_path / "w"))
        name = rng.choice(names)
        p = os.path.join(w, name)
        off = rng.randrange(os.path.getsize(p))
        flip_bit(p, off, rng.randrange(8))
        assert verify_code(w) == 2, (name, off)  # P5: every flip is seen
        got, rep = reopen(w, h)
        assert rep.damage, (name, off)
        if name == sg.CURRENT or name.startswith("snap-"):
            assert got == len(h.digests) - 1  # the log still has everything
        if name != segments(d)[-1]:
            # damage anywhere but in the newest segment's frames is never a mere torn tail
            assert rep.suspected_corruption or got == len(h.digests) - 1, (name, off)


# -- frame surgery -----------------------------------------------------------------------------


def _surgery(d, seg, fn):
    """Rewrite a segment's content (its frames; preallocation fill dropped) with `fn`."""
    p = os.path.join(d, seg)
    frames = frame_offsets(p)
    data = open(p, "rb").read()[:data_end(p)]
    new = fn(data, frames)
    with open(p, "wb") as f:
        f.write(new)
    return frames


def test_duplicated_last_frame(tmp_path):
    d, h = make_log(tmp_path / "w", frames=10)
    _surgery(d, segments(d)[-1], lambda b, fs: b + b[fs[-1][0]:fs[-1][1]])
    assert verify_code(d) == 2
    reopen(d, h, seq=10, suspected=True, kinds=["sequence"])


def test_duplicated_middle_frame(tmp_path):
    d, h = make_log(tmp_path / "w", frames=10)
    _surgery(d, segments(d)[-1],
             lambda b, fs: b[:fs[4][1]] + b[fs[4][0]:fs[4][1]] + b[fs[4][1]:])
    assert verify_code(d) == 2
    reopen(d, h, seq=5, suspected=True, kinds=["sequence"])


def test_swapped_frames(tmp_path):
    d, h = make_log(tmp_path / "w", frames=10)
    frames = _surgery(d, segments(d)[-1], lambda b, fs: b[:fs[3][0]] + b[fs[4][0]:fs[4][1]]
                      + b[fs[3][0]:fs[3][1]] + b[fs[4][1]:])
    assert verify_code(d) == 2
    got, rep = reopen(d, h, seq=3, suspected=True, kinds=["sequence"])
    # the bytes after the damage were set aside, not deleted
    q = os.path.join(d, "quarantine", f"{segments(d)[-1]}@{frames[3][0]}")
    assert os.path.getsize(q) == frames[-1][1] - frames[3][0]


def test_bad_frame_followed_by_valid_frames_is_suspected_corruption(tmp_path):
    d, h = make_log(tmp_path / "w", frames=10)
    seg = segments(d)[-1]
    p = os.path.join(d, seg)
    frames = frame_offsets(p)
    flip_bit(p, frames[6][0] + fr.HEADER_SIZE + 1, 3)  # a payload byte of frame 7
    damaged = open(p, "rb").read()
    assert verify_code(d) == 2
    got, rep = reopen(d, h, seq=6, suspected=True, kinds=["checksum"])
    assert "valid frame follows" in rep.damage[0].message
    q = open(os.path.join(d, "quarantine", f"{seg}@{frames[6][0]}"), "rb").read()
    assert q == damaged[frames[6][0]:frames[-1][1]]  # exactly the bytes cut off, kept


# -- segment surgery ---------------------------------------------------------------------------


@pytest.fixture
def seglog(tmp_path):
    d, h = make_log(tmp_path / "base", frames=90, segment_bytes=4096)
    segs = segments(d)
    assert len(segs) >= 5
    ends = {}
    for name in segs:
        fs = frame_offsets(os.path.join(d, name))
        ends[name] = fs[-1][2] if fs else None
    return d, h, segs, ends


def test_missing_middle_segment(tmp_path, seglog):
    d, h, segs, ends = seglog
    w = clone(d, str(tmp_path / "w"))
    os.unlink(os.path.join(w, segs[2]))
    assert verify_code(w) == 2
    reopen(w, h, seq=ends[segs[1]], suspected=True, kinds=["segment_chain"])
    assert sorted(os.listdir(os.path.join(w, "quarantine"))) == segs[3:]


def test_missing_last_segment_is_caught_by_current(tmp_path, seglog):
    d, h, segs, ends = seglog
    w = clone(d, str(tmp_path / "w"))
    os.unlink(os.path.join(w, segs[-1]))
    assert verify_code(w) == 2
    reopen(w, h, seq=ends[segs[-2]], suspected=True, kinds=["missing_segment"])


def test_missing_first_segment(tmp_path, seglog):
    d, h, segs, ends = seglog
    w = clone(d, str(tmp_path / "w"))
    os.unlink(os.path.join(w, segs[0]))
    assert verify_code(w) == 2
    reopen(w, h, seq=0, suspected=True, kinds=["sequence_gap"])


def test_duplicated_segment(tmp_path, seglog):
    d, h, segs, ends = seglog
    w = clone(d, str(tmp_path / "w"))
    shutil.copy(os.path.join(w, segs[1]), os.path.join(w, sg.segment_name(len(segs))))
    assert verify_code(w) == 2
    reopen(w, h, seq=len(h.digests) - 1, suspected=True, kinds=["bad_segment_header"])


def test_reordered_segments(tmp_path, seglog):
    d, h, segs, ends = seglog
    w = clone(d, str(tmp_path / "w"))
    a, b = os.path.join(w, segs[2]), os.path.join(w, segs[3])
    os.rename(a, a + ".x")
    os.rename(b, a)
    os.rename(a + ".x", b)
    assert verify_code(w) == 2
    reopen(w, h, seq=ends[segs[1]], suspected=True, kinds=["bad_segment_header"])


def test_segment_from_another_log(tmp_path, seglog):
    d, h, segs, ends = seglog
    other, _ = make_log(tmp_path / "other", frames=3)
    w = clone(d, str(tmp_path / "w"))
    data = bytearray(open(os.path.join(other, segments(other)[0]), "rb").read())
    hdr, _ = sg.encode_header(sg.decode_header(bytes(data)).log_id, len(segs),
                              len(h.digests), sg.decode_header(
                                  open(os.path.join(w, segs[-1]), "rb").read()).crc)
    with open(os.path.join(w, sg.segment_name(len(segs))), "wb") as f:
        f.write(hdr + bytes(data[sg.HEADER_SIZE:]))
    assert verify_code(w) == 2
    reopen(w, h, seq=len(h.digests) - 1, suspected=True, kinds=["bad_segment_header"])


# -- temp files and snapshots ------------------------------------------------------------------


def test_leftover_temp_files_are_cleaned_and_reported(tmp_path):
    d, h = make_log(tmp_path / "w", frames=12, snapshot_at=(6,))
    junk = [sn.snapshot_name(99) + ".tmp", sg.CURRENT + ".tmp", sg.segment_name(7) + ".tmp"]
    for name in junk:
        with open(os.path.join(d, name), "wb") as f:
            f.write(os.urandom(100))
    assert verify_code(d) == 0  # never part of the durable state: not damage
    s = MetadataStore.open(d)
    assert sorted(s.last_report.temp_files_removed) == sorted(junk)
    assert s.last_report.sound and s.digest() == h.digests[-1]
    assert not any(n.endswith(".tmp") for n in os.listdir(d))
    s.close()


def test_corrupt_newest_snapshot_falls_back_to_the_older_one(tmp_path):
    d, h = make_log(tmp_path / "base", frames=30, segment_bytes=4096, snapshot_at=(10, 20))
    snaps = snapshots(d)
    assert len(snaps) == 2
    for how in ("flip", "truncate", "bad_payload"):
        w = clone(d, str(tmp_path / how))
        p = os.path.join(w, snaps[-1])
        if how == "flip":
            flip_bit(p, os.path.getsize(p) - 3, 0)
        elif how == "truncate":
            os.truncate(p, 30)
        else:  # checksums fine, but the payload is not a metadata snapshot
            with open(p, "wb") as f:
                f.write(sn.encode(sn.decode(open(os.path.join(d, snaps[-1]), "rb").read())[0]
                                  .log_id, 20, b"not a snapshot"))
        assert verify_code(w) == 2
        s = MetadataStore.open(w)
        rep = s.last_report
        assert rep.snapshot_used == snaps[0] and rep.suspected_corruption
        assert [x.kind for x in rep.damage] == ["corrupt_snapshot"]
        assert rep.quarantined == [f"quarantine/{snaps[-1]}"]
        assert s.digest() == h.digests[-1]
        s.close()


def test_both_snapshots_corrupt_after_compaction(tmp_path):
    """Nothing valid to start from: an empty state, loudly reported, data set aside."""
    d, h = make_log(tmp_path / "w", frames=30, segment_bytes=4096, snapshot_at=(10, 20))
    assert sg.decode_header(open(os.path.join(d, segments(d)[0]), "rb").read()).first_seq > 1
    for name in snapshots(d):
        flip_bit(os.path.join(d, name), 50, 1)
    assert verify_code(d) == 2
    got, rep = reopen(d, h, seq=0, suspected=True)
    assert len([x for x in rep.damage if x.kind == "corrupt_snapshot"]) == 2
    assert len(os.listdir(os.path.join(d, "quarantine"))) >= 3
