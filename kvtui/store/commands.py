"""`kvtui wal inspect|verify|dump DIR`: look at a metadata log without changing it (the
arguments are parsed in kvtui/cli/wal.py).

All three are read-only (no repair, no truncation — that is what opening the store does) and
share one walk, `recovery.scan`, with the same checks recovery applies, plus a structural
decode of every frame's ops. While they run they hold a *shared* lock on LOCK, so a writer
cannot start mid-walk; if a writer is already running they say so, since its tail may be
moving.

Exit codes (the CLI contract): 0 when the log is sound; a damaged or unreadable directory is
bad input — `InputError([(file, offset, message), ...])`, which the CLI prints as
`file:offset: message` and turns into exit code 2, never a traceback. `inspect` and `dump`
print what they can read before raising.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys

from kvtui.errors import InputError
from kvtui.store import frame as fr
from kvtui.store import ops as o
from kvtui.store.fs import RealFS, open_regular
from kvtui.store.report import Damage
from kvtui.store.scan import LOCK
from kvtui.store.scan import scan as walk_log
from kvtui.store.state import MetaState, digest_of


def wal_command(command: str, directory: str, as_json: bool = False) -> int:
    """Run `inspect`, `verify` or `dump` on DIR (kvtui/cli/wal.py parses the command line)."""
    try:
        walk = _Walk(directory, decode_ops=True, want_ops=command == "dump")
        if command == "inspect":
            _inspect(walk, as_json)
        elif command == "verify":
            _verify(walk, as_json)
        else:
            _dump(walk)
    except BrokenPipeError:
        # the reader went away (`kvtui wal dump DIR | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _not_a_directory(path: str) -> str:
    """Why `path` cannot be walked: "no such directory" for a scenario file sent the user
    looking for a path that was plainly there."""
    if os.path.isfile(path):
        return "is a file, not a WAL directory"
    if os.path.exists(path):
        return "is not a directory (a WAL is a directory)"
    return "no such directory"


class _Walk:
    """One read-only scan of DIR with a state rebuilt alongside (for counts and the digest)."""

    def __init__(self, directory: str, decode_ops: bool, want_ops: bool):
        self.directory = os.path.abspath(directory)
        fs = RealFS()
        if not os.path.isdir(self.directory):
            raise InputError([(directory, None, _not_a_directory(self.directory))])
        self.in_use = False
        lock_fd = None
        lock = os.path.join(self.directory, LOCK)
        if os.path.exists(lock):
            try:
                lock_fd = open_regular(lock, os.O_RDONLY)  # a fifo would block a plain open
            except OSError as e:
                raise InputError([(lock, None, f"cannot read: {e.strerror}")]) from None
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                self.in_use = True
        self.state = MetaState()
        self.names: tuple[dict[int, str], dict[int, str], dict[int, str]] = ({}, {}, {})
        self.records = 0
        self.frames = 0
        self.bad_frames: list[Damage] = []
        self.want_ops = want_ops

        def load(payload) -> None:
            self.state = MetaState() if payload is None else MetaState.decode_snapshot(payload)
            for kind in (o.NODE, o.GROUP, o.SESSION):
                self.names[kind].update(enumerate(self.state.names[kind]))

        where: dict[int, tuple[str, int]] = {}  # seq -> (segment, offset)
        undecodable: set[int] = set()
        unapplied: list[tuple[int, str]] = []

        def apply(seq, ftype, payload) -> None:
            if ftype == fr.RECORDS:  # a generic record batch: no metadata in it
                return
            try:
                self.state.apply_payload(payload)
            except ValueError as e:
                unapplied.append((seq, str(e)))

        write = sys.stdout.write

        def visit(segment, offset, seq, ftype, payload) -> None:
            self.frames += 1
            where[seq] = (segment, offset)
            try:
                if ftype == fr.RECORDS:
                    recs = fr.split_records(payload)
                    self.records += len(recs)
                    if want_ops:
                        for r in recs:
                            write(json.dumps({"seq": seq, "segment": segment, "offset": offset,
                                              "record": bytes(r).hex()}) + "\n")
                    return
                if ftype != o.FRAME_OPS:
                    raise ValueError(f"unknown frame type {ftype}")
                decoded = o.decode(payload)
            except ValueError as e:
                self.bad_frames.append(Damage(segment, offset, "undecodable_frame",
                                                 f"frame {seq} checksums but does not decode: {e}"))
                undecodable.add(seq)
                return
            for op in decoded:
                if op[0] == "DEFINE":
                    self.names[op[1]][op[2]] = op[3]
                else:
                    self.records += 1
                if want_ops:
                    write(json.dumps(self._op_json(segment, offset, seq, op)) + "\n")

        try:
            self.scan = walk_log(fs, self.directory, load_snapshot=load, apply=apply,
                                visit_all=visit if decode_ops else None)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise InputError([(os.fsdecode(e.filename or directory), None, f"cannot read: {e.strerror or e}")]) from None
        finally:
            if lock_fd is not None:
                os.close(lock_fd)
        sc = self.scan
        if not (sc.segments or sc.snapshots or sc.current or os.path.exists(
                os.path.join(self.directory, "CURRENT"))):
            raise InputError([(directory, None, "not a kvtui WAL directory (no segments, "
                               "snapshots or CURRENT)")])
        # a frame that checksums but does not decode (or apply) is damage too
        for seq, err in unapplied:
            if seq not in undecodable:
                segment, offset = where.get(seq, ("?", None))
                self.bad_frames.append(Damage(
                    segment, offset, "undecodable_frame",
                    f"frame {seq} checksums but does not apply: {err}"))
        for d in self.bad_frames:
            sc.report.damage.append(d)
            sc.report.suspected_corruption = True

    def _name(self, kind: int, ident: int) -> str:
        return self.names[kind].get(ident, f"#{ident}")

    def _op_json(self, segment, offset, seq, op) -> dict:
        d: dict = {"seq": seq, "segment": segment, "offset": offset, "op": op[0]}
        if op[0] == "DEFINE":
            d.update(kind=o.KINDS[op[1]], id=op[2], name=op[3])
        elif op[0] == "NODE_REGISTER":
            d.update(node=self._name(o.NODE, op[1]), kv_blocks=op[2])
        elif op[0] == "NODE_STATE":
            d.update(node=self._name(o.NODE, op[1]), up=op[2])
        elif op[0] == "BLOCKS_STORED":
            d.update(node=self._name(o.NODE, op[1]), group=self._name(o.GROUP, op[2]),
                     keys=list(op[3]))
        elif op[0] == "BLOCKS_EVICTED":
            d.update(node=self._name(o.NODE, op[1]), keys=list(op[2]))
        elif op[0] == "NODE_CLEARED":
            d.update(node=self._name(o.NODE, op[1]))
        elif op[0] == "SESSION_ROUTE":
            d.update(session=self._name(o.SESSION, op[1]), node=self._name(o.NODE, op[2]))
        return d

    def problems(self) -> list[tuple[str, int | None, str]]:
        out = []
        for d in self.scan.report.damage:
            path = os.path.join(self.directory, d.file)
            msg = f"{d.kind}: {d.message}"
            if d.covered:
                msg += " (before the snapshot in use; not needed for recovery)"
            out.append((path, d.offset, msg))
        if self.scan.report.suspected_corruption:
            out.append((self.directory, None, "suspected corruption: the damage is not a clean "
                        "torn tail; acknowledged records may be affected"))
        else:
            out.append((self.directory, None, "torn tail only (what a crash mid-write leaves); "
                        "opening the store will truncate it"))
        return out

    def summary(self) -> dict:
        sc, rep = self.scan, self.scan.report
        plain = self.state.plain()
        return {
            "directory": self.directory,
            "log_id": None if sc.log_id is None else f"{sc.log_id:016x}",
            "current": None if sc.current is None else sc.current[1],
            "in_use": self.in_use,
            "segments": [{"name": s.name, "index": s.index, "bytes": s.size,
                          "used": s.valid_end if s.header else 0,
                          "first_seq": s.header.first_seq if s.header else None,
                          "last_seq": s.last_seq, "frames": s.frames, "role": s.role,
                          "status": s.status} for s in sc.segments],
            "snapshots": [{"name": s.name, "seq": s.seq, "bytes": s.size, "ok": s.ok,
                           "used": s.used, "error": s.error} for s in sc.snapshots],
            "temp_files": sc.temp_files,
            "quarantine": sc.quarantine_files,
            "other_files": sc.other_files,
            "frames": self.frames,
            "records": self.records,
            "bytes": sum(s.valid_end for s in sc.segments if s.header),
            "last_seq": rep.last_seq,
            "state": {"nodes": len(plain["nodes"]), "cache_entries": len(plain["entries"]),
                      "sessions": len(plain["sessions"]), "digest": digest_of(plain)},
            "damage": [d.describe() for d in rep.damage],
            "notes": rep.notes,
            "suspected_corruption": rep.suspected_corruption,
            "sound": not rep.damage,
        }


def _inspect(walk: _Walk, as_json: bool) -> None:
    s = walk.summary()
    if as_json:
        print(json.dumps(s, indent=2))
    else:
        print(f"WAL directory  {s['directory']}")
        cur = "missing" if s["current"] is None else f"segment {s['current']}"
        print(f"log id         {s['log_id'] or '-'}    CURRENT: {cur}"
              + ("    (a writer holds the lock)" if s["in_use"] else ""))
        print(f"\nsegments ({len(s['segments'])}):")
        print(f"  {'name':<18} {'first seq':>10} {'last seq':>10} {'frames':>8} {'used':>10}"
              f" {'file':>10}  {'role':<8} status")
        for g in s["segments"]:
            first = "-" if g["first_seq"] is None else g["first_seq"]
            last = "-" if g["last_seq"] is None else g["last_seq"]
            print(f"  {g['name']:<18} {first:>10} {last:>10} {g['frames']:>8} {g['used']:>10}"
                  f" {g['bytes']:>10}  {g['role']:<8} {g['status']}")
        print(f"\nsnapshots ({len(s['snapshots'])}):")
        for n in s["snapshots"]:
            st = "used" if n["used"] else ("ok" if n["ok"] else f"CORRUPT: {n['error']}")
            print(f"  {n['name']:<28} seq {n['seq']:>10} {n['bytes']:>12} bytes  {st}")
        for label, key in (("temp files", "temp_files"), ("quarantine", "quarantine"),
                           ("other files", "other_files")):
            if s[key]:
                print(f"\n{label} ({len(s[key])}): " + ", ".join(s[key]))
        st = s["state"]
        print(f"\ntotals         {s['frames']} frames, {s['records']} records, "
              f"{s['bytes']} bytes of frames; last seq {s['last_seq']}")
        print(f"state          {st['nodes']} nodes, {st['cache_entries']} cache entries, "
              f"{st['sessions']} sessions; digest {st['digest']}")
        print("health         " + ("sound" if s["sound"] else
                                   f"DAMAGED ({len(s['damage'])} finding(s))"))
        for d in s["damage"]:
            print(f"  - {d}")
        for n in s["notes"]:
            print(f"note           {n}")
    sys.stdout.flush()
    if not s["sound"]:
        raise InputError(walk.problems())


def _verify(walk: _Walk, as_json: bool) -> None:
    s = walk.summary()
    if as_json:
        print(json.dumps({k: s[k] for k in ("directory", "sound", "suspected_corruption",
                                            "damage", "notes", "frames", "records", "last_seq",
                                            "state", "in_use", "temp_files")}, indent=2))
    elif s["sound"]:
        extra = f"; {len(s['temp_files'])} leftover temp file(s) (harmless, removed on open)" \
            if s["temp_files"] else ""
        print(f"sound: {len(s['segments'])} segments, {len(s['snapshots'])} snapshots, "
              f"{s['frames']} frames, {s['records']} records, last seq {s['last_seq']}, "
              f"digest {s['state']['digest']}{extra}")
        if s["in_use"]:
            print("note: a writer holds the lock; its tail may have moved since")
        for n in s["notes"]:
            print(f"note: {n}")
    else:
        print(f"DAMAGED: {len(s['damage'])} finding(s)"
              + (" — SUSPECTED CORRUPTION" if s["suspected_corruption"] else " — torn tail"))
    sys.stdout.flush()
    if not s["sound"]:
        raise InputError(walk.problems())


def _dump(walk: _Walk) -> None:
    sys.stdout.flush()  # the records were written during the walk
    if walk.scan.report.damage:
        raise InputError(walk.problems())
