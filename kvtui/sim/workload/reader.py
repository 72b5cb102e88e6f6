"""What every trace reader shares: the record, the limits, problem lists and lazy line reading.

A reader turns one trace file into `TraceRequest`s one at a time (`records()` is a generator),
so nothing holds a whole trace unless it must (a weka conversation is one JSON document and is
read whole; it is one session, not the trace).

Nothing is dropped silently. A record that is not valid (unparseable, a missing or mistyped
field, a non-finite, negative or decreasing time, a length beyond `MAX_TOKENS`) is a problem
with its `file:line`. By default the problems are collected (up to `MAX_PROBLEMS`) and raised
together as one `InputError` when the reading ends; from the first problem on no more records
are yielded, so a run never starts on half a trace. With `skip_invalid` each such record is
skipped and counted instead (`skipped`, which the CLI prints). A trace with no valid request at
all (empty, header-only, or everything skipped) is an error either way.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from kvtui.errors import InputError
from kvtui.scenario.cost import MAX_REQUEST_TOKENS
from kvtui.scenario.trace_formats import TRACE_FORMATS, TraceFormat

MAX_PROBLEMS = 20
"""Stop reading a broken trace after this many problems: a wrong file would report every line."""

MAX_TOKENS = 10_000_000
"""Upper bound of a prompt or an output length: the longest context any released model accepts
(Llama 4 Scout, 10M tokens). Beyond it a length is a corrupt field, not a workload."""

MAX_SPAN_S = 1e9
"""Upper bound of a record's time from the trace's (or conversation's) start: ~31 years."""

MAX_HASH_ID = 2**63 - 1
"""Hash ids are packed into 64-bit words; larger ones would silently alias smaller ones."""

MAX_LINE_BYTES = 4 << 20
"""Longest line of a line-based trace: a Mooncake record of MAX_TOKENS has ~20k ids (~200 kB)."""

MAX_FILE_BYTES = 256 << 20
"""Largest single-document trace file (a weka conversation): the biggest shipped one is 1 MB."""


@dataclass(slots=True)
class TraceRequest:
    """One recorded call: when it is due, its lengths and its prompt's hash ids (if any)."""

    t: float  # seconds from the trace's first valid record (weka: from its conversation's start)
    prompt: int
    output: int
    hash_ids: list[int] | None = None
    think: float = 0.0  # weka: the client's pause after the previous reply


class Bad(Exception):
    """A problem with one record; the reader adds the file and line."""


class Problems:
    """The problems of one file, or the count of skipped records under `skip_invalid`."""

    def __init__(self, path: str, skip_invalid: bool):
        self.path = path
        self.skip_invalid = skip_invalid
        self.items: list[tuple[str, int | None, str]] = []
        self.skipped = 0

    def add(self, line: int | None, message: str) -> None:
        if self.skip_invalid:
            self.skipped += 1
        else:
            self.items.append((self.path, line, message))

    @property
    def full(self) -> bool:
        return len(self.items) >= MAX_PROBLEMS

    def raise_if_any(self) -> None:
        if self.items:
            raise InputError(self.items)


class TraceReader:
    """A line-based trace read lazily. Subclasses parse one line (`parse`) and say how far apart
    two raw times are in the format's time units (`ticks`); the base turns those into seconds
    with the format's row and checks the times and the lengths.

    What a format's records mean beyond their fields (tokens per hash id, time units) comes from
    its row in kvtui/scenario/trace_formats.py (`form`; by default the row of `format_name`), so
    one reader class can serve several rows.
    """

    format_name = ""

    def __init__(self, path: str, skip_invalid: bool = False, form: TraceFormat | None = None):
        self.path = path
        self.skip_invalid = skip_invalid
        self.skipped = 0
        self.form = form or TRACE_FORMATS[self.format_name]
        self.hash_block = self.form.hash_block

    # -- what a format provides ------------------------------------------------------------
    def parse(self, number: int, line: bytes) -> tuple[Any, TraceRequest] | None:
        """(raw time, record with t unset) of one line, None for a line that is no record (a
        header); raises `Bad`."""
        raise NotImplementedError

    def ticks(self, raw: Any, origin: Any) -> float:
        """Time units from `origin` (the first valid record's raw time) to `raw`."""
        raise NotImplementedError

    def seconds(self, raw: Any, origin: Any) -> float:
        return self.ticks(raw, origin) / self.form.ticks_per_s

    # -- the shared reading ----------------------------------------------------------------
    def records(self) -> Iterator[TraceRequest]:
        """Every valid record in file order, `t` in seconds from the first valid one."""
        problems = Problems(self.path, self.skip_invalid)
        origin: Any = None
        previous = 0.0
        found = 0
        for number, line in numbered_lines(self.path):
            try:
                parsed = self.parse(number, line)
                if parsed is None:
                    continue
                raw, rec = parsed
                check_length(rec.prompt, rec.output)
                t = 0.0 if origin is None else self.seconds(raw, origin)
                check_time(t, previous)
            except Bad as bad:
                problems.add(number, str(bad))
                if problems.full:
                    break
                continue
            origin = raw if origin is None else origin
            previous = rec.t = t
            found += 1
            self.skipped = problems.skipped
            if not problems.items:
                yield rec
        self.skipped = problems.skipped
        problems.raise_if_any()
        if found == 0:
            raise empty_trace(self.path, problems.skipped)


def check_length(prompt: int, output: int) -> None:
    """A request is held whole in memory (its token arrays and block keys): one past the
    request limit would run out of memory, not run (the same limit as a synthetic one's)."""
    if prompt + output > MAX_REQUEST_TOKENS:
        raise Bad(f"a request of {prompt:,} + {output:,} tokens is longer than the limit of {MAX_REQUEST_TOKENS:,}")


def check_time(t: float, previous: float) -> None:
    if not math.isfinite(t):
        raise Bad(f"time {t!r} from the trace's start is not a finite number")
    if t < previous:
        raise Bad(f"time goes backwards: {previous - t:g} s earlier than the record before; traces must be in time order")
    if t > MAX_SPAN_S:
        raise Bad(f"time {t:g} s from the trace's start is beyond the limit of {MAX_SPAN_S:g} s")


def empty_trace(path: str, skipped: int) -> InputError:
    why = f"all {skipped} records were invalid and skipped" if skipped else "it is empty or holds only a header"
    return InputError.one(path, None, f"no requests in this trace: {why}")


# --------------------------------------------------------------------------- files and lines
def open_binary(path: str) -> BinaryIO:
    """Open a trace file, turning every way it can be missing into an InputError naming it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError.one(path, None, "trace file not found") from None
    except IsADirectoryError:
        raise InputError.one(path, None, "is a directory, expected a trace file") from None
    except OSError as exc:
        raise InputError.one(path, None, f"cannot read trace: {exc.strerror or exc}") from None


def numbered_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for every non-blank line, read lazily.

    A line longer than MAX_LINE_BYTES is never held whole: it is read in bounded pieces to its
    end and reported (a record that long is no trace record, and a file without newlines
    would otherwise be read into memory at once).
    """
    with open_binary(path) as f:
        number = 0
        while True:
            try:
                line = f.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise InputError.one(path, number + 1, f"cannot read trace: {exc.strerror or exc}") from None
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while (rest := f.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                    pass
                yield number, b"\0too long"  # parse() reports it as a record problem
                continue
            if line.strip():
                yield number, line


TOO_LONG = f"line longer than {MAX_LINE_BYTES >> 20} MiB: not a trace record"


def json_object(line: bytes) -> dict:
    """One JSON object; any way it is not one (bad JSON, bad UTF-8, nested past Python's
    recursion limit, too long) is a `Bad` record, never an exception of json's own."""
    if line.startswith(b"\0too long"):
        raise Bad(TOO_LONG)
    try:
        rec = json.loads(line)
    except RecursionError:
        raise Bad("not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise Bad(f"not valid JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(rec, dict):
        raise Bad("expected a JSON object")
    return rec


# --------------------------------------------------------------------------- fields
def field(rec: dict, name: str) -> Any:
    if name not in rec:
        raise Bad(f"missing field {name!r}")
    return rec[name]


def number(rec: dict, name: str, minimum: float = 0.0, maximum: float = math.inf) -> float:
    value = field(rec, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Bad(f"{name}: expected a number, got {short(value)}")
    try:
        value = float(value)
    except OverflowError:
        raise Bad(f"{name}: {short(value)} is too large") from None
    if not math.isfinite(value):
        raise Bad(f"{name}: expected a finite number, got {value!r}")
    if value < minimum:
        raise Bad(f"{name}: must be >= {minimum:g}, got {value!r}")
    if value > maximum:
        raise Bad(f"{name}: must be <= {maximum:g}, got {value!r}")
    return value


def integer(rec: dict, name: str, minimum: int, maximum: int = MAX_TOKENS) -> int:
    value = field(rec, name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Bad(f"{name}: expected a whole number, got {short(value)}")
    return in_range(value, name, minimum, maximum)


def in_range(value: int, name: str, minimum: int, maximum: int) -> int:
    if value < minimum:
        raise Bad(f"{name}: must be >= {minimum}, got {value}")
    if value > maximum:
        raise Bad(f"{name}: must be <= {maximum:,} (a documented upper bound), got {short(value)}")
    return value


def hash_ids(rec: dict, name: str) -> list[int]:
    value = field(rec, name)
    # Types first, at C speed (bool is not int here: its type is bool), then the range.
    if not isinstance(value, list) or (value and (not set(map(type, value)) <= {int} or min(value) < 0 or max(value) > MAX_HASH_ID)):
        raise Bad(f"{name}: expected a list of whole numbers in [0, 2**63)")
    return value


def short(value: Any) -> str:
    """A value for a message, cut short: a corrupt field can be megabytes long or deeply nested."""
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} fields"
    if isinstance(value, int) and value.bit_length() > 200:
        return "a number of more than 60 digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def reader_class(name: str) -> type:
    """The reader of a trace format: the class its row in kvtui/scenario/trace_formats.py names."""
    module, _, cls = TRACE_FORMATS[name].reader.partition(":")
    return getattr(importlib.import_module(module), cls)


def make_reader(name: str, path: str, skip_invalid: bool = False) -> TraceReader:
    """A line reader of format `name` over `path`, reading by that format's row."""
    return reader_class(name)(path, skip_invalid, TRACE_FORMATS[name])
