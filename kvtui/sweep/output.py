"""The results file (grid order, byte-identical across backends) and the journal beside it.

Two files, two jobs:

- `OUT` (JSON Lines) holds one canonical line per run, in grid order. Completions that arrive
  out of order wait in memory until every earlier run is written, so `OUT` is always a prefix of
  the grid order and the same command gives the same bytes on any backend and worker count.
- `OUT`'s journal (`results.jsonl` -> `results.journal.jsonl`) gets every completion the moment
  it arrives, in completion order, with the machine-dependent facts the canonical line leaves
  out: wall time, worker (host:pid) and backend. Each record is flushed before the next run is
  accepted, so a run that finished is never redone, even when an earlier one was still running
  when the sweep was killed.

Resume reads both (a torn last line, as a kill leaves, is ignored), keeps every finished run
whose key is in the new grid, rewrites `OUT` as the grid-order prefix it can fill, and sends only
the rest to the backend.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from kvtui.errors import InputError
from kvtui.sweep.grid import RunSpec, key_text


def journal_path(out: str | Path) -> Path:
    p = Path(out)
    return p.with_name(p.stem + ".journal.jsonl") if p.suffix else p.with_name(p.name + ".journal.jsonl")


def _parse(text: str) -> dict | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def read_results(path: str | Path) -> list[str]:
    """The complete sweep lines of a results file, as text; [] when it does not exist.

    A line that does not parse (the torn tail a kill leaves) is skipped; a file whose lines are
    not sweep lines is refused, so a sweep never overwrites some other file."""
    p = Path(path)
    if not p.exists():
        return []
    lines: list[str] = []
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError.one(str(p), None, f"cannot read: {e}") from None
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        obj = _parse(raw)
        if obj is None:
            continue
        if not isinstance(obj.get("run"), dict) or obj.get("status") not in ("ok", "error"):
            raise InputError.one(str(p), number, "not a sweep result line (no run key and status); refusing to overwrite")
        lines.append(raw)
    return lines


def read_journal(path: str | Path) -> list[dict]:
    """The journal's complete records ({line, wall_time_s, worker, backend}); torn tail skipped."""
    p = Path(path)
    if not p.exists():
        return []
    records = []
    for raw in p.read_text(encoding="utf-8", errors="replace").split("\n"):
        obj = _parse(raw) if raw.strip() else None
        if obj is not None and isinstance(obj.get("line"), str) and _parse(obj["line"]) is not None:
            records.append(obj)
    return records


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
        self.file = open(path, "a", encoding="utf-8")

    def record(self, line: str, wall_time_s: float, worker: str) -> None:
        rec = {"wall_time_s": round(wall_time_s, 6), "worker": worker, "backend": self.backend, "line": line}
        self.file.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class OrderedWriter:
    """Writes lines to `OUT` strictly in grid order, holding early arrivals until their turn."""

    def __init__(self, path: Path, specs: list[RunSpec], known: dict[str, str]):
        self.path = path
        self.waiting: dict[int, str] = {}
        for spec in specs:
            line = known.get(key_text(spec.key()))
            if line is not None:
                self.waiting[spec.index] = line
        self.next = 0
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            self.file = f
            self._drain()
        os.replace(tmp, path)
        self.file = open(path, "a", encoding="utf-8")

    def add(self, index: int, line: str) -> None:
        self.waiting[index] = line
        self._drain()
        self.file.flush()

    def _drain(self) -> None:
        while self.next in self.waiting:
            self.file.write(self.waiting.pop(self.next) + "\n")
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
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), restval="")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, target)
