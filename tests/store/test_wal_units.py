"""The building blocks: frames, segment headers, CURRENT, snapshots, compaction planning."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtui.store import frame as fr
from kvtui.store import ops as o
from kvtui.store import segment as sg
from kvtui.store import snapshot as sn
from kvtui.store.state import MetaState

FAST = settings(max_examples=60, deadline=None, database=None)


def _frames(n: int, first: int = 1) -> bytes:
    return b"".join(fr.encode(first + i, 1, bytes([i % 251]) * (i * 7 % 40)) for i in range(n))


def test_frame_roundtrip_and_layout():
    buf = fr.encode(42, 3, b"hello")
    assert len(buf) == fr.HEADER_SIZE + 5
    crc, length, seq, ftype = fr.HEADER.unpack_from(buf)
    assert (length, seq, ftype) == (5, 42, 3)
    seen = []
    stop = fr.scan(buf, 0, 42, lambda s, t, p: seen.append((s, t, bytes(p))))
    assert stop.reason is None and stop.next_seq == 43 and seen == [(42, 3, b"hello")]
    assert stop.visited_from == 0
    assert [(o, s) for o, s, _, _ in fr.iter_frames(buf, 0, len(buf))] == [(0, 42)]


@FAST
@given(st.integers(0, 10_000), st.integers(0, 7))
def test_any_single_bit_flip_in_a_frame_is_detected(pos, bit):
    """The checksum covers length, seq, type and payload: no flip goes unnoticed."""
    buf = bytearray(_frames(5))
    pos %= len(buf)
    buf[pos] ^= 1 << bit
    stop = fr.scan(bytes(buf), 0, 1, None)
    assert stop.reason is not None


def test_sequence_numbers_catch_duplicated_and_swapped_frames():
    a, b, c = fr.encode(1, 1, b"a"), fr.encode(2, 1, b"b"), fr.encode(3, 1, b"c")
    assert fr.scan(a + b + b + c, 0, 1, None).reason == "sequence"
    assert fr.scan(a + c + b, 0, 1, None).reason == "sequence"
    stop = fr.scan(a + c + b, 0, 1, None)
    assert stop.offset == len(a) and stop.next_seq == 2


def test_zero_fill_is_never_a_valid_frame():
    assert fr.scan(bytes(4096), 0, 1, None).reason == "checksum"
    assert fr.find_valid_after(bytes(1 << 16), 0, 1) is None


def test_find_valid_after_locates_frames_behind_damage():
    body = _frames(20, first=1000)
    f0 = len(fr.encode(1000, 1, b""))  # frame 1000 has an empty payload
    f1 = f0 + len(fr.encode(1001, 1, b"x" * 7))
    damaged = bytearray(body)
    damaged[f0 + 20] ^= 0xFF  # inside frame 1001
    stop = fr.scan(bytes(damaged), 0, 1000, None)
    assert stop.reason == "checksum" and stop.offset == f0 and stop.next_seq == 1001
    assert fr.find_valid_after(bytes(damaged), f0 + 1, 1001) == f1
    # a seq window boundary (2**24) is still searched
    near = (1 << 24) - 3
    blob = b"\x00" * 10 + _frames(8, first=near)
    assert fr.find_valid_after(blob, 0, near) == 10


def test_segment_header_and_current():
    h, crc = sg.encode_header(0xABC, 7, 1234, 99)
    assert len(h) == sg.HEADER_SIZE == 44
    got = sg.decode_header(h)
    assert (got.log_id, got.index, got.first_seq, got.prev_crc) == (0xABC, 7, 1234, 99)
    assert got.crc == crc
    for i in range(len(h)):
        bad = bytearray(h)
        bad[i] ^= 0x10
        with pytest.raises(sg.SegmentHeaderError):
            sg.decode_header(bytes(bad))
    assert sg.decode_current(sg.encode_current(5, 9)) == (5, 9)
    with pytest.raises(sg.SegmentHeaderError):
        sg.decode_current(sg.encode_current(5, 9)[:-1] + b"\x00")
    assert sg.parse_segment_name(sg.segment_name(12)) == 12
    assert sg.parse_segment_name("wal-1.log") is None


def test_snapshot_codec_detects_any_flip():
    blob = sn.encode(1, 77, b"payload" * 10)
    hdr, payload = sn.decode(blob)
    assert hdr.seq == 77 and bytes(payload) == b"payload" * 10
    for i in range(0, len(blob), 3):
        bad = bytearray(blob)
        bad[i] ^= 0x01
        with pytest.raises(sn.SnapshotError):
            sn.decode(bytes(bad))
    with pytest.raises(sn.SnapshotError):
        sn.decode(blob[:-1])


def test_compaction_keeps_two_snapshots_and_the_segments_after_the_older():
    segs = [("s0", 1), ("s1", 50), ("s2", 100), ("s3", 150)]
    assert sn.plan_compaction(segs, [120]) == ([], [])  # one snapshot: keep everything
    assert sn.plan_compaction(segs, [60, 149]) == (["s0"], [])
    assert sn.plan_compaction(segs, [40, 99, 149]) == (["s0", "s1"], [40])
    assert sn.plan_compaction(segs, [200, 300]) == (["s0", "s1", "s2"], [])  # never the last


def test_op_encoding_is_compact():
    # an op that stores 8 blocks: 11 bytes of header + 8 x 8 bytes of keys
    assert o.S_STORED.size == 11 and o.S_EVICTED.size == 7 and o.S_ROUTE.size == 7
    assert len(o.pack_keys(list(range(8)))) == 64
    with pytest.raises(ValueError):
        o.pack_keys([-1])
    with pytest.raises(ValueError):
        o.pack_keys([1 << 64])


def test_state_snapshot_roundtrip_many_nodes():
    """Masks wider than 64 bits (more than 64 nodes) survive a snapshot."""
    st = MetaState()
    for i in range(80):
        st.define(o.NODE, i, f"n{i}")
    st.define(o.GROUP, 0, "g")
    st.stored(79, 0, [1, 2, 3])
    st.stored(3, 0, [2])
    st.registry[79] = (10, False)
    back = MetaState.decode_snapshot(st.encode_snapshot())
    assert back.plain() == st.plain()
    assert back.held == st.held


def test_state_snapshot_rejects_garbage():
    st = MetaState()
    st.define(o.NODE, 0, "a")
    st.define(o.GROUP, 0, "g")
    st.stored(0, 0, [5, 6])
    blob = st.encode_snapshot()
    for cut in range(len(blob)):
        with pytest.raises(ValueError):
            MetaState.decode_snapshot(blob[:cut])
    with pytest.raises(ValueError):
        MetaState.decode_snapshot(blob + b"x")


def test_apply_payload_rejects_malformed_ops():
    st = MetaState()
    with pytest.raises(ValueError):
        st.apply_payload(bytes([99]))
    with pytest.raises(ValueError):  # node id 0 never defined
        st.apply_payload(o.S_REGISTER.pack(o.NODE_REGISTER, 0, 5))
    with pytest.raises(ValueError):  # truncated keys
        st.apply_payload(struct.pack("<BHII", o.BLOCKS_STORED, 0, 0, 3) + b"\x00" * 8)


def _sample_state() -> MetaState:
    st = MetaState()
    for i, n in enumerate(("a", "b", "c")):
        st.define(o.NODE, i, n)
    st.define(o.GROUP, 0, "g")
    st.define(o.SESSION, 0, "s")
    st.stored(0, 0, [1, 2, 3])
    st.stored(2, 0, [3, 4])
    st.evict(0, [1])
    st.registry[1] = (16, True)
    st.sessions[0] = 2
    return st


@FAST
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_snapshot_payloads_decode_or_raise_value_error(edits):
    """Past the file checksum (e.g. a software bug), a bad payload is a ValueError, never a
    crash of another kind — recovery then falls back to the older snapshot."""
    blob = bytearray(_sample_state().encode_snapshot())
    for pos, val in edits:
        blob[pos % len(blob)] = val
    try:
        MetaState.decode_snapshot(bytes(blob))
    except ValueError:
        pass


@FAST
@given(st.binary(max_size=200))
def test_garbage_op_payloads_raise_value_error(blob):
    try:
        _sample_state().apply_payload(blob)
    except ValueError:
        pass
