"""The results file (grid order, byte-identical across backends) and the journal beside it.

Two files, two jobs:

- `OUT` (JSON Lines) holds one canonical line per run, in grid order. Completions that arrive
  out of order wait in memory until every earlier run is written, so `OUT` is always a prefix of
  the grid order and the same command gives the same bytes on any backend and worker count.
- `OUT`'s journal (`results.jsonl` -> `results.journal.jsonl`) gets every completion the moment
  it arrives, in completion order, with the machine-dependent facts the canonical line leaves
  out: wall time, the worker's CPU time for the run, worker (host:pid) and backend. Each record is flushed before the next run is
  accepted, so a run that finished is never redone, even when an earlier one was still running
  when the sweep was killed.

Resume reads both (a torn last line, as a kill leaves, is ignored), keeps every finished run
whose key is in the new grid, rewrites `OUT` as the grid-order prefix it can fill, and sends only
the rest to the backend.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from kvtui.files import write_output
from kvtui.files import open_append, open_regular
from kvtui.errors import InputError
from kvtui.sweep.grid import RunSpec, key_text

MAX_LINE_BYTES = 1 << 26  # 64 MiB: far beyond any result document; longer is not a sweep line


def journal_path(out: str | Path) -> Path:
    p = Path(out)
    return p.with_name(p.stem + ".journal.jsonl") if p.suffix else p.with_name(p.name + ".journal.jsonl")


def _parse(text: str) -> dict | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _is_result(obj: dict | None) -> bool:
    return obj is not None and isinstance(obj.get("run"), dict) and obj.get("status") in ("ok", "error")


def _is_journal_record(obj: dict | None) -> bool:
    return obj is not None and isinstance(obj.get("line"), str) and _is_result(_parse(obj["line"]))


def _own_lines(path: str | Path, what: str, is_own) -> list[tuple[str, dict]]:
    """(text, object) of every line of a file this sweep wrote; [] when it does not exist.

    Only a regular file is read (a fifo or /dev/zero is refused unread: kvtui/files.py). Every
    line must be one of ours, except a last line without its newline that starts like one:
    the torn tail a kill leaves, skipped. Anything else -- a scenario, notes, a CSV -- is
    refused, so a sweep never rewrites or appends to a file it did not write."""
    f = open_regular(str(path), what)
    if f is None:
        return []
    found = []
    with f:  # line by line: a large file that is not ours is refused at its first line
        for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES), b""), start=1):
            text = raw.decode("utf-8", errors="replace").rstrip("\n")
            obj = _parse(text) if text.strip() else None
            if is_own(obj):
                found.append((text, obj))
            elif text.strip() and not (_torn_tail(raw) and text.lstrip().startswith("{")):
                raise InputError.one(str(path), number, f"not a {what} line; refusing to overwrite it (give another --out)")
    return found


def _torn_tail(raw: bytes) -> bool:
    """A line without its newline (the last one, or one longer than any line a sweep writes)."""
    return not raw.endswith(b"\n")


def read_results(path: str | Path) -> list[str]:
    """The complete sweep lines of a results file, as text (see `_own_lines`)."""
    return [raw for raw, _ in _own_lines(path, "sweep result", _is_result)]


def read_journal(path: str | Path) -> list[dict]:
    """The journal's complete records ({line, wall_time_s, worker, backend}); torn tail skipped."""
    return [obj for _, obj in _own_lines(path, "sweep journal", _is_journal_record)]


def finished_runs(out: str | Path, retry_failed: bool = False) -> dict[str, str]:
    """key text -> line for every run already done, from the results file and its journal.

    The journal is read after the results file and in its own (chronological) order, so a run
    redone with --retry-failed is represented by its latest line."""
    found: dict[str, str] = {}
    candidates = [*read_results(out), *(r["line"] for r in read_journal(journal_path(out)))]
    for line in candidates:
        obj = json.loads(line)
        found[key_text(obj["run"])] = line
    if retry_failed:
        found = {k: line for k, line in found.items() if json.loads(line).get("status") == "ok"}
    return found


class Journal:
    """Append-only, one flushed record per completion."""

    def __init__(self, path: Path, backend: str):
        self.backend = backend
        self.file = open_append(str(path), "sweep journal")  # never through a symlink

    def record(self, line: str, wall_time_s: float, worker: str, cpu_s: float = 0.0) -> None:
        rec = {"wall_time_s": round(wall_time_s, 6), "cpu_s": round(cpu_s, 6), "worker": worker,
               "backend": self.backend, "line": line}
        self.file.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class OrderedWriter:
    """Writes lines to `OUT` strictly in grid order, holding early arrivals until their turn;
    a run skipped (past its ladder's saturation) has no line and is passed over."""

    def __init__(self, path: Path, specs: list[RunSpec], known: dict[str, str]):
        self.path = path
        self.waiting: dict[int, str | None] = {}
        for spec in specs:
            line = known.get(key_text(spec.key()))
            if line is not None:
                self.waiting[spec.index] = line
        self.next = 0
        self.file = io.StringIO()
        self._drain()
        write_output(str(path), self.file.getvalue(), "the sweep results")
        self.file = open_append(str(path), "sweep results")

    def add(self, index: int, line: str) -> None:
        self.waiting[index] = line
        self._drain()
        self.file.flush()

    def skip(self, indices: list[int]) -> int:
        """Pass over these runs (none has a line yet); how many were new."""
        fresh = [i for i in indices if i >= self.next and i not in self.waiting]
        self.waiting.update(dict.fromkeys(fresh))
        self._drain()
        self.file.flush()
        return len(fresh)

    def _drain(self) -> None:
        while self.next in self.waiting:
            line = self.waiting.pop(self.next)
            if line is not None:
                self.file.write(line + "\n")
            self.next += 1

    def close(self) -> None:
        self.file.close()


def flatten(obj, prefix: str = "") -> dict[str, object]:
    """Leaves of a nested document as dotted paths; lists are kept whole as JSON text."""
    out: dict[str, object] = {}
    for k, v in obj.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, path + "."))
        elif isinstance(v, list):
            out[path] = json.dumps(v, separators=(",", ":"))
        else:
            out[path] = v
    return out


def write_csv(path: str | Path, lines: list[str]) -> None:
    """One row per line: the run key (`scenario`, `grid.<key>`, `policy`, `seed`), status, error,
    then every leaf of the result document; columns in first-seen order over all lines."""
    rows = []
    for line in lines:
        obj = json.loads(line)
        run = obj["run"]
        row: dict[str, object] = {"scenario": run["scenario"], "policy": run["policy"], "seed": run["seed"]}
        row.update({f"grid.{k}": v for k, v in run["grid"].items()})
        row["status"] = obj["status"]
        row["error"] = obj.get("error", "")
        row.update({f"result.{k}": v for k, v in flatten(obj.get("result", {})).items()})
        rows.append(row)
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=list(columns), restval="")
    w.writeheader()
    w.writerows(rows)
    write_output(str(path), text.getvalue(), "the sweep CSV")
