"""The stats line's WAL counts agree with their nouns (it read "1 snapshots")."""

from types import SimpleNamespace

from kvtui.tui.widgets.stats_line import _wal_text


def _run(records: int, snapshots: int, recoveries: int):
    counters = {"records": records, "bytes": 2_000, "snapshots": snapshots, "recoveries": recoveries}
    return SimpleNamespace(wal_counters=lambda: counters, control_plane_down=False)


def test_one_of_each_is_singular():
    assert _wal_text(_run(1, 1, 1)) == " · WAL 1 record 2 kB, 1 snapshot, 1 recovery"


def test_several_are_plural():
    assert _wal_text(_run(3_107, 2, 0)) == " · WAL 3,107 records 2 kB, 2 snapshots, 0 recoveries"
