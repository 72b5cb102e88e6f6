"""A durable recording of a live session, in the project's own WAL store (kvtui/store).

Each delivery is one record of a RECORDS frame (`Log.add`), msgpack-encoded:
`[0, engine, at, [frames...]]` for a received message, `[1, engine, at, first_missing,
missing]` for an unfilled gap, `[2, engine, at]` for an engine watched from the start,
`[3, engine, at, {field: value}]` for a scrape of its `/metrics` (EngineFigures' fields),
`[4, engine, at, {field: value}]` for a request route mode served (Served's fields, its
Forensics' nested). The store gives the recording what the control plane's metadata
gets: checksummed frames, fsync batches, and a torn tail after a crash cut cleanly on reading.
Reading is the store's read-only walk (`kvtui/store/scan.py`), so `kvtui wal verify FILE`
checks a recording too.
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields

import msgpack

from kvtui.errors import InputError
from kvtui.live.delivery import Delivery, Gap, Received, Scraped, Served, Watching
from kvtui.live.forensics import Forensics
from kvtui.live.metrics import EngineFigures
from kvtui.store import Log
from kvtui.store import frame as fr
from kvtui.store.fs import RealFS
from kvtui.store.scan import scan

_RECEIVED, _GAP, _WATCHING, _SCRAPED, _SERVED = 0, 1, 2, 3, 4
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
    raise TypeError(f"not a delivery: {delivery!r}")


def decode(record: bytes) -> Delivery:
    match msgpack.unpackb(record, raw=False):
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
    raise ValueError("not a recording record")


def _served(fields: dict) -> Served:
    """A Served back from its dict (msgpack gives lists for its tuples)."""
    try:
        f = fields["forensics"]
        forensics = Forensics(**{**f, "causes": tuple(map(tuple, f["causes"])), "evicted_in": tuple(f["evicted_in"])})
        return Served(**{**fields, "candidates": tuple(map(tuple, fields["candidates"])), "forensics": forensics})
    except (KeyError, TypeError) as e:
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


def read_recording(directory: str) -> list[Delivery]:
    """Every delivery of a recording in order; InputError for a missing or damaged one."""
    if not os.path.isdir(directory):
        raise InputError.one(directory, None, "no such recording directory")
    out: list[Delivery] = []

    def apply(seq: int, ftype: int, payload) -> None:
        if ftype == fr.RECORDS:
            out.extend(decode(bytes(r)) for r in fr.split_records(payload))

    try:
        report = scan(RealFS(), directory, apply=apply).report
    except ValueError as e:
        raise InputError.one(directory, None, f"not a kvtui recording: {e}") from None
    if report.suspected_corruption:
        raise InputError([(directory, None, f"damaged recording: {d.describe()}") for d in report.damage])
    if not out:  # a live session records every engine it watches first
        raise InputError.one(directory, None, "not a kvtui live recording (no engine in it)")
    return out
