"""Under `fsync: always`, a checksum failure inside a whole last frame is corruption (issue 10).

Every frame under `always` is written and fsynced before its append returns, so a last frame
that is whole on disk -- every sector of it written, the fill after it intact -- was
acknowledged; a bad checksum there is damage to acknowledged data, not a write a crash cut
short. A last frame that shows a never-written sector (zeros or fill) is still a torn tail,
under every policy; and the other policies, which may lose whole unsynced frames, keep the
torn-tail reading of a last-frame checksum failure.
"""

from __future__ import annotations

import os
import random

import pytest

from kvtui.store import MetadataStore
from kvtui.store import segment as sg
from storetest_support import History, build_log, flip_bit, frame_offsets, segments


def make_log(path, policy: str):
    h = History()
    s = MetadataStore.open(path, fsync=policy, snapshot_every=0, segment_bytes=1 << 20)
    build_log(s, random.Random(5), 20, h)
    s.crash()  # no clean close: the tail stays as written, fill after it
    return str(path), h


def _last_frame(d):
    seg = segments(d)[-1]
    path = os.path.join(d, seg)
    return path, frame_offsets(path)[-1]


def _reopen(d, policy):
    s = MetadataStore.open(d, fsync=policy, snapshot_every=0)
    rep = s.last_report
    s.close()
    return rep


def test_bit_flip_in_a_whole_last_frame_is_corruption_under_always(tmp_path):
    d, _ = make_log(tmp_path / "base", "always")
    path, (off, end, seq) = _last_frame(d)
    flip_bit(path, off + 17 + (end - off - 17) // 2, 3)
    rep = _reopen(d, "always")
    assert rep.suspected_corruption, rep.damage
    assert [x.kind for x in rep.damage] == ["checksum"]
    assert "acknowledged" in rep.damage[0].message


@pytest.mark.parametrize("policy", ["batch", "never"])
def test_same_flip_stays_a_torn_tail_under_the_other_policies(tmp_path, policy):
    d, _ = make_log(tmp_path / "base", "always")
    path, (off, end, seq) = _last_frame(d)
    flip_bit(path, off + 17 + (end - off - 17) // 2, 3)
    rep = _reopen(d, policy)
    assert [x.kind for x in rep.damage] == ["torn_tail"]
    assert not rep.suspected_corruption


@pytest.mark.parametrize("blank", [b"\0", sg.FILL])
def test_a_never_written_sector_is_a_torn_tail_even_under_always(tmp_path, blank):
    d, _ = make_log(tmp_path / "base", "always")
    path, (off, end, seq) = _last_frame(d)
    cut = max(off + 8, (end - 1) // 512 * 512)  # the frame's last sector was never written
    with open(path, "r+b") as f:
        f.seek(cut)
        f.write(blank * (end - cut))
    rep = _reopen(d, "always")
    assert [x.kind for x in rep.damage] == ["torn_tail"], rep.damage
    assert not rep.suspected_corruption
