"""What recovery found and did: `Damage` findings and the `RecoveryReport`.

A report is the record of one real disk operation (so `seconds` is wall time — unlike engine
state, which never reads a clock). The engine shows it in its recovery event (`as_items`),
`kvtui wal verify` prints it, and the tests read it to check P5: damage to durable data is
reported, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# kinds of damage; only "torn_tail" is what a crash by itself can leave behind
TORN_TAIL = "torn_tail"


class RecoveryError(Exception):
    """Recovery could not (strict mode: would not) produce a state. `.report` says why."""

    def __init__(self, message: str, report: "RecoveryReport"):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True, slots=True)
class Damage:
    """One thing found wrong. `offset` is a byte offset in `file` (None: the whole file).

    `kind` is one of: torn_tail, short_header, bad_length, checksum, bad_type, sequence (a
    frame-level problem at `offset`); bad_segment_header, segment_chain, sequence_gap (a
    segment that does not belong where it is); corrupt_snapshot; bad_current,
    missing_current, missing_segment (the newest segments cannot be confirmed);
    undecodable_frame (checksums, but its ops do not decode — reported by `kvtui wal`).
    """

    file: str
    offset: int | None
    kind: str
    message: str
    length: int = 0
    covered: bool = False  # lies wholly before the base snapshot: not needed for this recovery

    def describe(self) -> str:
        where = self.file if self.offset is None else f"{self.file}@{self.offset}"
        extra = " (before the snapshot used; not needed for recovery)" if self.covered else ""
        return f"{where}: {self.kind}: {self.message}{extra}"


@dataclass
class RecoveryReport:
    """What a recovery (or a verification) found and did."""

    directory: str
    mode: str
    snapshot_used: str | None = None
    snapshot_seq: int = 0
    frames_replayed: int = 0
    records_replayed: int = 0
    bytes_replayed: int = 0
    last_seq: int = 0
    bytes_truncated: int = 0
    damage: list[Damage] = field(default_factory=list)
    suspected_corruption: bool = False
    quarantined: list[str] = field(default_factory=list)
    temp_files_removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sound(self) -> bool:
        return not self.damage

    def as_items(self, wall_time: bool = False) -> tuple[tuple[str, object], ...]:
        """Flat (name, value) pairs, e.g. for the engine's ControlPlaneRecovered event.

        Everything here is a function of the log's content except `seconds`, so it is left
        out unless asked for: events must stay identical across runs of the same seed.
        """
        items = (
            ("mode", self.mode),
            ("snapshot_used", self.snapshot_used),
            ("snapshot_seq", self.snapshot_seq),
            ("frames_replayed", self.frames_replayed),
            ("records_replayed", self.records_replayed),
            ("bytes_replayed", self.bytes_replayed),
            ("last_seq", self.last_seq),
            ("bytes_truncated", self.bytes_truncated),
            ("damage", tuple(d.describe() for d in self.damage)),
            ("suspected_corruption", self.suspected_corruption),
            ("quarantined", tuple(self.quarantined)),
            ("temp_files_removed", tuple(self.temp_files_removed)),
        )
        return items + ((("seconds", round(self.seconds, 6)),) if wall_time else ())

    def summary(self) -> str:
        base = (f"snapshot {self.snapshot_used} (seq {self.snapshot_seq})" if self.snapshot_used
                else "empty state")
        s = (f"recovered to seq {self.last_seq} from {base} + {self.frames_replayed} frames "
             f"({self.records_replayed} records, {self.bytes_replayed} bytes) "
             f"in {self.seconds * 1000:.1f} ms")
        if self.damage:
            s += f"; {len(self.damage)} damage finding(s), {self.bytes_truncated} bytes set aside"
            if self.suspected_corruption:
                s += "; SUSPECTED CORRUPTION"
        return s
