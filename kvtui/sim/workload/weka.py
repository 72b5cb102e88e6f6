"""Weka's agentic traces (callanjfox/kv-cache-tester, `traces/`): one Claude-Code conversation
per JSON file.

`{id, block_size: 64, hash_id_scope: "local", requests: [{t, type, in, out, hash_ids,
think_time, ...} | {t, type: "subagent", requests: [...]}]}`. `t` is seconds from the session's
start; `hash_ids` name `block_size`-token blocks and are scoped to the conversation (sub-agents
share the parent's ids). There is no global clock: the scenario's arrival process starts the
conversations (see `trace.TraceWorkload`).

A conversation is one JSON document, so it is read whole, one file at a time and only when
needed: the validating pass at construction keeps nothing but the file list and counts, and the
replay reads a file again when its conversation starts.

Every problem has a line. The shipped files are written on one line, so that is line 1; in a
pretty-printed file the offending request's line is found after the fact by walking the text to
its JSON path (json keeps no positions; the walk uses the C scanner to skip values, and runs
only when there is a problem). The message also names the path (`requests[3].in`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring
from pathlib import Path
from typing import Iterator

from kvtui.errors import InputError
from kvtui.scenario.trace_formats import TRACE_FORMATS, TraceFormat
from kvtui.sim.workload.reader import (
    MAX_FILE_BYTES,
    MAX_PROBLEMS,
    MAX_SPAN_S,
    Bad,
    Problems,
    TraceRequest,
    check_length,
    field,
    hash_ids,
    integer,
    number,
    open_binary,
)

MAX_SUBAGENT_DEPTH = 16
"""Sub-agents inside sub-agents deeper than this are a broken file (Claude Code nests one level)."""
MAX_HASH_BLOCK = 1 << 20

Where = tuple  # a JSON path: ("requests", 3, "requests", 0)


@dataclass(slots=True)
class WekaConversation:
    id: str
    hash_block: int
    requests: list[TraceRequest]
    skipped: int = 0


class WekaReader:
    """The session files of a path (a file, or every `*.json` of a directory in name order)."""


    def __init__(self, path: str, skip_invalid: bool = False, max_files: int | None = None, form: TraceFormat | None = None):
        self.path = path
        self.skip_invalid = skip_invalid
        self.files = session_files(path)[:max_files]
        self.skipped = 0
        self.form = form or TRACE_FORMATS["weka"]  # its hash block when a file states none, its time unit

    def conversations(self) -> Iterator[WekaConversation]:
        """Every conversation, one file at a time; problems of all files are raised together."""
        problems: list[tuple[str, int | None, str]] = []
        self.skipped = 0
        for f in self.files:
            try:
                conv = self.read(f)
            except InputError as exc:
                problems.extend(exc.problems)
                if len(problems) >= MAX_PROBLEMS:
                    break
                continue
            self.skipped += conv.skipped
            if not problems:
                yield conv
        if problems:
            raise InputError(problems)

    def read(self, path: str) -> WekaConversation:
        """One conversation; sub-agent requests are merged into its timeline at their times."""
        data = read_bounded(path)
        doc = parse_document(path, data)
        if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
            raise InputError.one(path, 1, "expected a JSON object with a 'requests' list")
        problems = Problems(path, self.skip_invalid)
        located: list[tuple[Where, str]] = []

        def add(where: Where, message: str) -> None:
            problems.add(None, message)
            located.append((where, message))

        try:
            hash_block = integer(doc, "block_size", 1, MAX_HASH_BLOCK) if "block_size" in doc else self.form.hash_block
        except Bad as bad:
            raise InputError.one(path, line_of(data, ("block_size",)), str(bad)) from None
        conv_id = doc.get("id")
        conv_id = conv_id if isinstance(conv_id, str) and conv_id else Path(path).stem
        requests: list[TraceRequest] = []
        collect(doc["requests"], ("requests",), 0.0, hash_block, requests, add, 0)
        if problems.items:
            raise InputError([(path, line_of(data, where), msg) for where, msg in located[:MAX_PROBLEMS]])
        if not requests:
            why = f" (all {problems.skipped} invalid and skipped)" if problems.skipped else ""
            raise InputError.one(path, line_of(data, ("requests",)), f"a conversation with no requests{why}")
        requests.sort(key=lambda r: r.t)
        origin = requests[0].t  # the conversation starts with its first request
        per_s = self.form.ticks_per_s
        for rec in requests:
            rec.t = (rec.t - origin) / per_s
            rec.think /= per_s
        return WekaConversation(conv_id, hash_block, requests, problems.skipped)


def session_files(path: str) -> list[str]:
    p = Path(path)
    try:
        if p.is_dir():
            files = sorted(str(f) for f in p.iterdir() if f.suffix == ".json" and f.is_file())
            if not files:
                raise InputError.one(path, None, "no weka session files (*.json) in this directory")
            return files
    except OSError as exc:
        raise InputError.one(path, None, f"cannot list the directory: {exc.strerror or exc}") from None
    if not p.exists():
        raise InputError.one(path, None, "trace file not found")
    return [path]


def read_bounded(path: str) -> bytes:
    """The file's bytes, at most MAX_FILE_BYTES. Read in pieces: `read(MAX_FILE_BYTES + 1)` would
    allocate the whole bound up front (256 MiB for a 1 MB conversation)."""
    with open_binary(path) as f:
        try:
            data = _read_at_most(f, MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise InputError.one(path, None, f"cannot read trace: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError.one(path, None, f"larger than {MAX_FILE_BYTES >> 20} MiB: not a weka conversation")
    return data


def _read_at_most(f, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit and (chunk := f.read(min(1 << 20, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def parse_document(path: str, data: bytes):
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise InputError.one(path, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        line = data.count(b"\n", 0, too_deep_at(data)) + 1
        raise InputError.one(path, line, "not valid JSON: nested too deeply") from None
    except ValueError:
        raise InputError.one(path, None, "not UTF-8 text") from None


_STRUCTURE = re.compile(rb'\\.|["\[\]{}]', re.DOTALL)


def too_deep_at(data: bytes, limit: int = 500) -> int:
    """Offset where the nesting of brackets (outside strings) first passes `limit`."""
    depth, in_string = 0, False
    for m in _STRUCTURE.finditer(data):
        c = m.group()
        if c == b'"':
            in_string = not in_string
        elif in_string or len(c) == 2:
            continue
        elif c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return m.start()
        else:
            depth -= 1
    return 0


def collect(items: list, where: Where, offset: float, hash_block: int, out: list, add, depth: int) -> None:
    """Flatten requests and sub-agent entries into one list.

    A sub-agent's requests carry times on the parent's clock when they are not before the
    sub-agent's own `t`; times that are (a sub-agent clock starting at 0) are shifted by it.
    Within one list the times must not go backwards.
    """
    previous = None
    for i, item in enumerate(items):
        here = (*where, i)
        label = json_path(here)
        try:
            if not isinstance(item, dict):
                raise Bad("expected a JSON object")
            own_t = number(item, "t", 0.0, MAX_SPAN_S)
            if previous is not None and own_t < previous:
                raise Bad(f"t {own_t:g} is earlier than the request before ({previous:g}); requests must be in time order")
            t = own_t + offset
            if item.get("type") == "subagent":
                inner = field(item, "requests")
                if not isinstance(inner, list):
                    raise Bad("requests: expected a list")
                if depth >= MAX_SUBAGENT_DEPTH:
                    raise Bad(f"sub-agents nested more than {MAX_SUBAGENT_DEPTH} deep")
                previous = own_t
                times = [r.get("t") for r in inner if isinstance(r, dict)]
                numeric = [x for x in times if isinstance(x, (int, float)) and not isinstance(x, bool)]
                shift = t if numeric and min(numeric) + offset < t else offset
                collect(inner, (*here, "requests"), shift, hash_block, out, add, depth + 1)
                continue
            prompt = integer(item, "in", 1)
            output = integer(item, "out", 0)
            check_length(prompt, output)
            ids = hash_ids(item, "hash_ids")
            if len(ids) > -(-prompt // hash_block):
                raise Bad(f"hash_ids: {len(ids)} blocks of {hash_block} tokens is more than the {prompt} input tokens")
            think = number(item, "think_time", 0.0, MAX_SPAN_S) if item.get("think_time") is not None else 0.0
        except Bad as bad:
            add(here, f"{label}: {bad}")
            continue
        previous = own_t
        out.append(TraceRequest(t, prompt, output, ids, think))


def json_path(where: Where) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(where))


# --------------------------------------------------------------------------- lines after the fact
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def line_of(data: bytes, where: Where) -> int | None:
    """The line on which the value at JSON path `where` starts (1 for a one-line file)."""
    if data.count(b"\n") <= 1:
        return 1
    try:
        text = data.decode("utf-8")
        idx = _offset_of(text, where)
    except (ValueError, IndexError, RecursionError):
        return None
    return None if idx is None else text.count("\n", 0, idx) + 1


def _offset_of(text: str, where: Where) -> int | None:
    """Walk to the value at `where`, skipping the values before it with the C scanner."""
    idx = _WS.match(text, 0).end()
    for part in where:
        if isinstance(part, str):
            if text[idx] != "{":
                return None
            idx = _WS.match(text, idx + 1).end()
            while True:
                if text[idx] != '"':
                    return None
                key, idx = scanstring(text, idx + 1)
                idx = _WS.match(text, idx).end() + 1  # past the colon
                idx = _WS.match(text, idx).end()
                if key == part:
                    break
                idx = _next_item(text, idx)
                if idx is None:
                    return None
        else:
            if text[idx] != "[":
                return None
            idx = _WS.match(text, idx + 1).end()
            for _ in range(part):
                idx = _next_item(text, idx)
                if idx is None:
                    return None
    return idx


def _next_item(text: str, idx: int) -> int | None:
    """From the start of a value, the start of the value after the comma (None at the end)."""
    _, idx = _DECODER.raw_decode(text, idx)
    idx = _WS.match(text, idx).end()
    if text[idx] != ",":
        return None
    return _WS.match(text, idx + 1).end()
