"""A durable recording of a live session, in the project's own WAL store (kvtui/store).

Each delivery is one record of a RECORDS frame (`Log.add`), msgpack-encoded:
`[0, engine, at, [frames...]]` for a received message, `[1, engine, at, first_missing,
missing]` for an unfilled gap, `[2, engine, at]` for an engine watched from the start,
`[3, engine, at, {field: value}]` for a scrape of its `/metrics` (EngineFigures' fields),
`[4, engine, at, {field: value}]` for a request route mode served (Served's fields, its
Forensics' nested), `[5, engine, at, last_seq, seq]` for an engine that restarted. The store
gives the recording what the control plane's metadata gets: checksummed frames, fsync batches,
and a torn tail after a crash cut cleanly on reading. Reading is the store's read-only walk
(`kvtui/store/scan.py`), so `kvtui wal verify FILE` checks a recording too.

What reading tells, besides the deliveries (`Reading.warnings`): a damaged last entry (the
batched-fsync rule allows losing what was not yet flushed, and the user is told how much: the
frames and bytes cut), and records that checksum but do not decode (counted and skipped: a
recording `wal verify` calls sound always replays). The store walks a recording mapped, not
read, and a long zero or garbage tail is recognised without a byte-by-byte search, so damage of
any size costs bounded memory and time.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields

import msgpack

from kvtui.errors import InputError
from kvtui.live.delivery import Delivery, Gap, Received, Restarted, Scraped, Served, Watching
from kvtui.live.forensics import Forensics
from kvtui.live.metrics import EngineFigures
from kvtui.store import Log
from kvtui.store import frame as fr
from kvtui.store.fs import RealFS
from kvtui.store.scan import scan

_RECEIVED, _GAP, _WATCHING, _SCRAPED, _SERVED, _RESTARTED = 0, 1, 2, 3, 4, 5
_FIGURES = {f.name for f in fields(EngineFigures)}


def encode(delivery: Delivery) -> bytes:
    match delivery:
        case Received(engine=e, at=at, frames=frames, replayed=replayed):
            return msgpack.packb([_RECEIVED, e, at, list(frames)] + ([True] if replayed else []), use_bin_type=True)
        case Gap(engine=e, at=at, first_missing=first, missing=n):
            return msgpack.packb([_GAP, e, at, first, n], use_bin_type=True)
        case Watching(engine=e, at=at):
            return msgpack.packb([_WATCHING, e, at], use_bin_type=True)
        case Scraped(engine=e, at=at, figures=figures):
            return msgpack.packb([_SCRAPED, e, at, asdict(figures)], use_bin_type=True)
        case Served(engine=e, at=at):
            return msgpack.packb([_SERVED, e, at, asdict(delivery)], use_bin_type=True)
        case Restarted(engine=e, at=at, last_seq=last, seq=seq):
            return msgpack.packb([_RESTARTED, e, at, last, seq], use_bin_type=True)
    raise TypeError(f"not a delivery: {delivery!r}")


def decode(record: bytes) -> Delivery:
    """One record back as its delivery; ValueError for anything that is not one."""
    try:
        value = msgpack.unpackb(record, raw=False)
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise ValueError(f"not msgpack: {e}") from None
    match value:
        case [0, str(engine), float(at), list(frames)]:
            return Received(engine, at, tuple(frames))
        case [0, str(engine), float(at), list(frames), True]:  # replayed (recordings before it lack the flag)
            return Received(engine, at, tuple(frames), replayed=True)
        case [1, str(engine), float(at), int(first), int(n)]:
            return Gap(engine, at, first, n)
        case [2, str(engine), float(at)]:
            return Watching(engine, at)
        case [3, str(engine), float(at), dict(figures)] if set(figures) <= _FIGURES:
            return Scraped(engine, at, EngineFigures(**figures))
        case [4, str(), float(), dict(served)]:
            return _served(served)
        case [5, str(engine), float(at), int(last), int(seq)]:
            return Restarted(engine, at, last, seq)
    raise ValueError("not a recording record")


def _served(fields: dict) -> Served:
    """A Served back from its dict (msgpack gives lists for its tuples)."""
    try:
        f = fields["forensics"]
        forensics = Forensics(**{**f, "causes": tuple(map(tuple, f["causes"])), "evicted_in": tuple(f["evicted_in"])})
        return Served(**{**fields, "candidates": tuple(map(tuple, fields["candidates"])), "forensics": forensics,
                         "block_keys": tuple(fields.get("block_keys", ()))})
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a served request: {e}") from None


class Recorder:
    """Appends deliveries to a new recording directory; `flush` makes them durable."""

    def __init__(self, directory: str):
        if os.path.exists(directory) and os.listdir(directory):
            raise InputError.one(directory, None, "already exists and is not empty; "
                                 "a recording goes into a new directory")
        self.log = Log.open(directory, fsync="batch")

    def add(self, delivery: Delivery) -> None:
        self.log.add(encode(delivery))

    def flush(self) -> None:
        self.log.flush()

    def close(self) -> None:
        self.log.close()


@dataclass
class Reading:
    """A recording as read: its deliveries, and what the reader must be told about it."""

    deliveries: list[Delivery] = field(default_factory=list)
    undecodable: int = 0  # records that checksum but are no delivery
    warnings: list[str] = field(default_factory=list)


def read_recording(directory: str) -> list[Delivery]:
    """Every delivery of a recording in order; InputError for a missing or damaged one."""
    return read_recording_report(directory).deliveries


def read_recording_report(directory: str) -> Reading:
    """The deliveries of a recording and its warnings (a lost tail, records skipped)."""
    if not os.path.isdir(directory):
        raise InputError.one(directory, None, "no such recording directory")
    reading = Reading()

    def apply(seq: int, ftype: int, payload) -> None:
        if ftype != fr.RECORDS:
            return
        try:
            records = fr.split_records(payload)
        except ValueError:
            reading.undecodable += 1
            return
        for r in records:
            try:
                reading.deliveries.append(decode(bytes(r)))
            except ValueError:
                reading.undecodable += 1

    try:
        report = scan(RealFS(), directory, apply=apply, mapped=True).report
    except (ValueError, OSError) as e:
        raise InputError.one(directory, None, f"not a kvtui recording: {e}") from None
    if report.suspected_corruption:
        raise InputError([(directory, None, f"damaged recording: {d.describe()}") for d in report.damage])
    if not reading.deliveries:  # a live session records every engine it watches first
        raise InputError.one(directory, None, "not a kvtui live recording (no engine in it)")
    reading.warnings = _warnings(directory, report, reading.undecodable)
    return reading


def _warnings(directory: str, report, undecodable: int) -> list[str]:
    """A torn tail is what the batched-fsync rule allows to lose, but never silently."""
    out = [f"{directory}: the recording's last write was cut short: {d.length:,} bytes at "
           f"{d.file}@{d.offset} not replayed (deliveries not yet flushed when it stopped are lost; "
           f"{len(report.damage)} damaged entr{'y' if len(report.damage) == 1 else 'ies'})"
           for d in report.damage[:1]]
    if undecodable:
        out.append(f"{directory}: {undecodable:,} record{'s' if undecodable != 1 else ''} "
                   "checksummed but were not deliveries; skipped")
    return out
