"""kvtui.store: the control plane's durable metadata — a WAL, snapshots and recovery.

Modules, one concept each:
    fs          the file layer every write goes through (injectable; see faultfs for faults)
    frame       record framing: checksum, length, seq, type; one frame = one atomic batch
    segment     bounded segment files, their chained headers, CURRENT
    snapshot    snapshot files (temp + fsync + rename + dir fsync) and compaction planning
    report      Damage findings and the RecoveryReport
    scan        the read-only walk: base snapshot, chain and frame checks, replay, repair plan
    recovery    strict and point-in-time recovery: the repairs, quarantine
    wal         the single-writer Log: append, flush, fsync policies, fail-stop, lock
    ops         the metadata ops and their binary encoding
    state       the in-memory metadata value, its snapshot codec and canonical digest
    metadata    MetadataStore: the API the engine uses
    commands    `kvtui wal inspect|verify|dump`

Nothing here imports Textual or Rich.
"""

from kvtui.store.metadata import MetadataStore, StoreCrashed
from kvtui.store.report import Damage, RecoveryError, RecoveryReport
from kvtui.store.wal import FSYNC_POLICIES, Log, LogFailed, LogLocked, WALError

__all__ = ["MetadataStore", "StoreCrashed", "RecoveryReport", "RecoveryError", "Damage", "Log",
           "LogFailed", "LogLocked", "WALError", "FSYNC_POLICIES"]
