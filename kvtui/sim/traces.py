"""Trace replay: recorded workloads instead of synthetic groups.

Three formats (see shared/data/README.md for where they come from):

- mooncake JSONL: `{"timestamp": ms, "input_length", "output_length", "hash_ids"}` per line;
  each hash id names a 512-token block of the prompt, and ids are prefix-chained, so equal id
  prefixes mean equal prompt prefixes.
- azure CSV: `TIMESTAMP,ContextTokens,GeneratedTokens`; lengths and times only, no prefixes.
- weka JSON: one agent conversation per file, requests at `t` seconds from its start, hash ids
  naming `block_size`-token (64) blocks scoped to that conversation. There is no global clock:
  the scenario's arrival process starts the conversations.

Trace hash blocks are coarser than the simulated KV blocks (512 or 64 tokens against 16). The
hash ids are chained with `chain_opaque` (one key per hash block, standing for the whole prefix
up to it), and each simulated block is keyed by the chained key of the hash block it ends in
plus its end offset there: equal id prefixes give equal key prefixes, and the cache sees the
trace's reuse at the simulator's granularity. Prompt tokens no hash id covers, and every output
block, get keys of their own (per request): nothing else shares them.

Every file is read line by line at construction, so a broken trace stops the run before it
starts, with `file:line: message` for each problem (`InputError`), never a traceback.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import simpy

from kvtui.errors import InputError
from kvtui.scenario.model import Arrival, Trace
from kvtui.sim.hashing import chain_opaque
from kvtui.sim.request import Request
from kvtui.sim.workload import Submit, slo_fields, start_arrivals

MOONCAKE_HASH_BLOCK = 512
WEKA_DEFAULT_HASH_BLOCK = 64
MAX_PROBLEMS = 20
"""Stop reading a broken trace after this many problems: a wrong file would report every line."""

LABELLED_PREFIXES = 8
"""Mooncake requests are grouped by their first hash id, so the screen can colour shared
prefixes; the first this-many distinct ids get a label of their own, the rest are "other"."""

MEMO_MAX_KEYS = 500_000
"""Hash-block keys remembered before the memo is cleared (~60 MB): more than the whole
Mooncake conversation trace has (~290k), bounded so a long replay cannot grow without limit."""


@dataclass(slots=True)
class TraceRequest:
    """One recorded call: when it is due, its lengths and its prompt's hash ids (if any)."""

    t: float  # mooncake/azure: sim seconds; weka: seconds from the conversation's start
    prompt: int
    output: int
    hash_ids: list[int] | None = None
    think: float = 0.0  # weka: the client's pause after the previous reply


@dataclass(slots=True)
class WekaConversation:
    id: str
    hash_block: int
    requests: list[TraceRequest]


# --------------------------------------------------------------------------- the workload
class TraceWorkload:
    """Replays a trace: the engine's workload interface, like `SyntheticWorkload`.

    Mooncake and azure requests arrive at their recorded times and never wait for each other
    (open loop). Weka conversations start by the scenario's arrival process, cycling through
    the files in name order; within one, a turn goes at its recorded time but never before the
    previous reply has come back plus the recorded think time, since its prompt contains it.
    A rejected or failed turn ends the conversation, like a synthetic session. `start_s` does
    not apply to weka (it has no global timeline); `time_scale` scales its in-session gaps.
    """

    def __init__(self, trace: Trace, arrival: Arrival, block_size: int, rng: np.random.Generator):
        self.trace = trace
        self.arrival = arrival
        self.block_size = block_size
        self.rng = rng
        self.records: list[TraceRequest] = []
        self.conversations: list[WekaConversation] = []
        if trace.format == "mooncake":
            self.records = read_mooncake(trace.path, trace.limit, trace.start_s, trace.time_scale)
        elif trace.format == "azure":
            self.records = read_azure(trace.path, trace.limit, trace.start_s, trace.time_scale)
        elif trace.format == "weka":
            self.conversations = read_weka(trace.path, trace.limit)
        else:
            raise ValueError(f"unknown trace format {trace.format!r}")
        self.requests_issued = 0
        self.sessions_started = 0
        self._slo = slo_fields(trace.slo, trace.sheddable)  # the Request fields every replayed call carries
        self._chain = HashChain(b"mooncake")
        self._labels: dict[int, str] = {}
        self.env: simpy.Environment | None = None
        self._submit: Submit | None = None

    def start(self, env: simpy.Environment, submit: Submit) -> None:
        self.env = env
        self._submit = submit
        if self.trace.format == "weka":
            if self.conversations:
                start_arrivals(env, self.arrival, self.rng, self._may_start, self._start_conversation)
        else:
            env.process(self._replay())

    def system_prompt_keys(self, group_name: str) -> list[int]:
        """Traces have no declared system prompts to pin."""
        return []

    # -- open-loop replay (mooncake, azure) ------------------------------------------------
    def _replay(self):
        env = self.env
        for rec in self.records:
            if rec.t > env.now:
                yield env.timeout(rec.t - env.now)
            self._submit(self._open_loop_request(rec))

    def _open_loop_request(self, rec: TraceRequest) -> Request:
        self.requests_issued += 1
        n = self.requests_issued
        rid = f"req-{n}"
        bs = self.block_size
        total_blocks = (rec.prompt + rec.output) // bs
        if rec.hash_ids is None:  # azure: nothing is shared
            keys = own_keys(b"azure", n, 0, total_blocks)
            group = "azure"
        else:
            keys = covered_keys(rec.hash_ids, MOONCAKE_HASH_BLOCK, rec.prompt, bs, self._chain)
            keys += own_keys(b"own", n, len(keys), total_blocks - len(keys))
            group = self._label(rec.hash_ids[0]) if rec.hash_ids else "other"
        return Request(
            id=rid,
            session=rid,
            group=group,
            turn=1,
            prompt_tokens=rec.prompt,
            output_tokens=rec.output,
            block_keys=tuple(keys),
            arrival=self.env.now,
            **self._slo,
        )

    def _label(self, first_id: int) -> str:
        label = self._labels.get(first_id)
        if label is None:
            label = f"p{first_id}" if len(self._labels) < LABELLED_PREFIXES else "other"
            self._labels[first_id] = label
        return label

    # -- weka conversations ----------------------------------------------------------------
    def _may_start(self) -> bool:
        return not self._at_limit()

    def _at_limit(self) -> bool:
        return self.trace.limit is not None and self.requests_issued >= self.trace.limit

    def _start_conversation(self) -> simpy.Process:
        conv = self.conversations[self.sessions_started % len(self.conversations)]
        replay = self.sessions_started // len(self.conversations) + 1
        self.sessions_started += 1
        session = conv.id if replay == 1 else f"{conv.id}#{replay}"
        return self.env.process(self._conversation(conv, session))

    def _conversation(self, conv: WekaConversation, session: str):
        """One replayed agent conversation.

        Its hash chain (and memo) lives as long as the conversation: ids are scoped to it, and
        its turns share ~95 % of their blocks with the turn before, so each turn hashes only
        what is new.
        """
        env = self.env
        scale = self.trace.time_scale
        began = env.now
        chain = HashChain(f"weka/{session}".encode())
        bs = self.block_size
        previous_end = began
        for turn, rec in enumerate(conv.requests, start=1):
            due = began if turn == 1 else max(began + rec.t * scale, previous_end + rec.think * scale)
            if due > env.now:
                yield env.timeout(due - env.now)
            if self._at_limit():
                return
            self.requests_issued += 1
            n = self.requests_issued
            keys = covered_keys(rec.hash_ids, conv.hash_block, rec.prompt, bs, chain)
            keys += own_keys(b"own", n, len(keys), (rec.prompt + rec.output) // bs - len(keys))
            req = Request(
                id=f"req-{n}",
                session=session,
                group=conv.id,
                turn=turn,
                prompt_tokens=rec.prompt,
                output_tokens=rec.output,
                block_keys=tuple(keys),
                arrival=env.now,
                **self._slo,
            )
            outcome = yield self._submit(req)
            if outcome != "completed":
                return
            previous_end = env.now


# --------------------------------------------------------------------------- keys
class HashChain:
    """Chained keys of a trace's hash blocks, remembered by (previous key, hash id).

    A hash block's key is `chain_opaque` of its id under the previous block's key, so it stands
    for the whole prefix up to it, whether or not the trace's ids are themselves prefix-chained.
    A prefix seen before costs one dict lookup per hash block instead of one digest. The memo
    is cleared when it reaches MEMO_MAX_KEYS, so a long replay stays bounded.
    """

    def __init__(self, salt: bytes):
        self.salt = salt
        self.memo: dict[tuple[int | None, int], int] = {}
        self._last_ids: list[int] = []
        self._last_keys: list[int] = []

    def keys(self, hash_ids: list[int]) -> list[int]:
        """Chained keys of `hash_ids`, starting from what the previous call shares with them.

        A conversation's next request repeats the previous one's ids and adds some, so the
        shared part is one list comparison rather than a lookup per id.
        """
        shared = common_prefix(self._last_ids, hash_ids)
        out = self._last_keys[:shared]
        state: int | None = out[-1] if out else None
        memo = self.memo
        for hid in hash_ids[shared:]:
            key = memo.get((state, hid))
            if key is None:
                key = chain_opaque([hid], state, self.salt)[0]
                if len(memo) >= MEMO_MAX_KEYS:
                    memo.clear()
                memo[(state, hid)] = key
            out.append(key)
            state = key
        self._last_ids, self._last_keys = hash_ids, out
        return out


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix, by slice comparisons (C speed) and bisection."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] holds, a[:n] != b[:n]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection on 64-bit ints, so distinct inputs stay distinct."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def covered_keys(hash_ids: list[int], hash_block: int, prompt: int, block_size: int, chain: HashChain) -> list[int]:
    """Keys of the prompt's full blocks that the trace's hash ids cover.

    A simulated block is keyed by the chained key of the hash block its last token lies in and
    its end offset in that hash block, mixed into one 64-bit key. Equal hash-id prefixes give
    equal key prefixes; any block size works, inside one hash block or spanning several. The
    expansion is vectorised: a 12k-token Mooncake prompt is ~750 blocks but only ~24 digests.
    """
    n = min(prompt, len(hash_ids) * hash_block) // block_size
    if n == 0:
        return []
    ends = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(block_size)
    which = (ends - np.uint64(1)) // np.uint64(hash_block)
    offsets = ends - which * np.uint64(hash_block)
    hashed = np.array(chain.keys(hash_ids[: int(which[-1]) + 1]), dtype=np.uint64)
    return _mix(hashed[which.astype(np.intp)] + offsets * _GOLDEN).tolist()


def own_keys(salt: bytes, serial: int, first: int, count: int) -> list[int]:
    """`count` keys no other request shares: output blocks, and prompt text no id covers.

    One digest names the request (`salt`, `serial`); the block index is mixed in.
    """
    if count <= 0:
        return []
    base = np.uint64(chain_opaque([serial], None, salt)[0])
    return _mix(base + np.arange(first, first + count, dtype=np.uint64) * _GOLDEN).tolist()


# --------------------------------------------------------------------------- reading
class _Bad(Exception):
    """A problem with one record; the reader adds the file and line."""


class _Problems:
    def __init__(self, path: str):
        self.path = path
        self.items: list[tuple[str, int | None, str]] = []

    def add(self, line: int | None, message: str) -> None:
        self.items.append((self.path, line, message))

    @property
    def full(self) -> bool:
        return len(self.items) >= MAX_PROBLEMS

    def raise_if_any(self) -> None:
        if self.items:
            raise InputError(self.items)


def _open_binary(path: str):
    """Open a trace file, turning every way it can be missing into an InputError naming it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError.one(path, None, "trace file not found") from None
    except IsADirectoryError:
        raise InputError.one(path, None, "is a directory, expected a trace file") from None
    except OSError as exc:
        raise InputError.one(path, None, f"cannot read trace: {exc.strerror or exc}") from None


def _numbered_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for every non-blank line, read lazily."""
    with _open_binary(path) as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                yield number, line


def _number(rec: dict, name: str, minimum: float = 0.0) -> float:
    value = _field(rec, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(f"{name}: expected a number, got {value!r}")
    if value < minimum:
        raise _Bad(f"{name}: must be >= {minimum:g}, got {value!r}")
    return float(value)


def _integer(rec: dict, name: str, minimum: int) -> int:
    value = _field(rec, name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{name}: expected a whole number, got {value!r}")
    if value < minimum:
        raise _Bad(f"{name}: must be >= {minimum}, got {value}")
    return value


def _hash_ids(rec: dict, name: str) -> list[int]:
    value = _field(rec, name)
    if not isinstance(value, list) or not all(type(v) is int and v >= 0 for v in value):
        raise _Bad(f"{name}: expected a list of non-negative whole numbers")
    return value


def _field(rec: dict, name: str) -> Any:
    if name not in rec:
        raise _Bad(f"missing field {name!r}")
    return rec[name]


def _json_object(line: bytes) -> dict:
    try:
        rec = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise _Bad(f"not valid JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(rec, dict):
        raise _Bad("expected a JSON object")
    return rec


def read_mooncake(path: str, limit: int | None, start_s: float, time_scale: float) -> list[TraceRequest]:
    """Parse a Mooncake JSONL trace into requests with sim arrival times (seconds)."""
    problems = _Problems(path)
    stamps: list[float] = []  # seconds since the trace's first request
    records: list[TraceRequest] = []
    first = previous = None
    for number, line in _numbered_lines(path):
        try:
            rec = _json_object(line)
            ms = _number(rec, "timestamp")
            prompt = _integer(rec, "input_length", 1)
            output = _integer(rec, "output_length", 0)
            ids = _hash_ids(rec, "hash_ids")
            want = -(-prompt // MOONCAKE_HASH_BLOCK)
            if len(ids) != want:
                raise _Bad(
                    f"hash_ids: {len(ids)} ids for input_length {prompt}, "
                    f"expected ceil({prompt}/{MOONCAKE_HASH_BLOCK}) = {want}"
                )
            if previous is not None and ms < previous:
                raise _Bad(
                    f"timestamp {ms:g} is earlier than the line before ({previous:g}); "
                    "traces must be in time order"
                )
        except _Bad as bad:
            problems.add(number, str(bad))
            if problems.full:
                break
            continue
        first = ms if first is None else first
        previous = ms
        t = (ms - first) / 1000.0
        if t < start_s or problems.items:
            continue
        stamps.append(t)
        records.append(TraceRequest(0.0, prompt, output, ids))
        if limit is not None and len(records) >= limit:
            break
    problems.raise_if_any()
    for rec, t in zip(records, spread_ties(stamps)):
        rec.t = max(0.0, t - start_s) * time_scale
    return records


def spread_ties(times: list[float]) -> list[float]:
    """Spread runs of equal times evenly up to the next distinct time.

    The Mooncake conversation trace rounds arrivals to 3-second buckets; replayed as written,
    dozens of requests would land in one instant and the queues would show a burst that never
    happened. A run of n requests at T goes out at T + i * w / n, where w is the gap to the next
    distinct time, capped at the trace's median gap (so a tie before a long silence is not
    smeared across the silence; the last run uses the median gap too).
    """
    gaps = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    typical = gaps[len(gaps) // 2] if gaps else 0.0
    out = list(times)
    i = 0
    while i < len(times):
        j = i
        while j + 1 < len(times) and times[j + 1] == times[i]:
            j += 1
        run = j - i + 1
        if run > 1:
            window = min(times[j + 1] - times[i], typical) if j + 1 < len(times) else typical
            for k in range(run):
                out[i + k] = times[i] + k * window / run
        i = j + 1
    return out


def read_azure(path: str, limit: int | None, start_s: float, time_scale: float) -> list[TraceRequest]:
    """Parse an Azure LLM inference CSV (`TIMESTAMP,ContextTokens,GeneratedTokens`)."""
    problems = _Problems(path)
    records: list[TraceRequest] = []
    origin: tuple[int, float] | None = None
    previous = None
    for number, raw in _numbered_lines(path):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            problems.add(number, "not UTF-8 text")
            continue
        fields = [f.strip() for f in line.split(",")]
        if number == 1 and fields[0].lower() == "timestamp":
            continue  # the header
        try:
            if len(fields) < 3:
                raise _Bad(f"expected 3 columns TIMESTAMP,ContextTokens,GeneratedTokens, got {len(fields)}")
            day, seconds = _azure_time(fields[0])
            prompt = _csv_int(fields[1], "ContextTokens", 1)
            output = _csv_int(fields[2], "GeneratedTokens", 0)
            origin = origin or (day, seconds)
            t = (day - origin[0]) * 86400.0 + (seconds - origin[1])
            if previous is not None and t < previous:
                raise _Bad(f"TIMESTAMP {fields[0]} is earlier than the line before; traces must be in time order")
        except _Bad as bad:
            problems.add(number, str(bad))
            if problems.full:
                break
            continue
        previous = t
        if t < start_s or problems.items:
            continue
        records.append(TraceRequest((t - start_s) * time_scale, prompt, output))
        if limit is not None and len(records) >= limit:
            break
    problems.raise_if_any()
    return records


def _azure_time(text: str) -> tuple[int, float]:
    """`2023-11-16 18:15:46.6805900` -> (day ordinal, seconds into the day).

    Parsed by hand: the fraction has 7 digits, more than `datetime` accepts; and keeping the
    day apart keeps the seconds small enough for float precision.
    """
    day_part, _, clock = text.replace("T", " ").partition(" ")
    try:
        day = date.fromisoformat(day_part).toordinal()
        hours, minutes, seconds = clock.split(":")
        value = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    except ValueError:
        raise _Bad(f"TIMESTAMP: expected YYYY-MM-DD HH:MM:SS.fff, got {text!r}") from None
    return day, value


def _csv_int(text: str, name: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _Bad(f"{name}: expected a whole number, got {text!r}") from None
    if value < minimum:
        raise _Bad(f"{name}: must be >= {minimum}, got {value}")
    return value


def read_weka(path: str, limit: int | None) -> list[WekaConversation]:
    """Parse a weka session file, or every `*.json` file of a directory in name order.

    With a request `limit` only the first `limit` files can ever start (each conversation that
    starts issues a request at once), so no more are read.
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(str(f) for f in p.iterdir() if f.suffix == ".json" and f.is_file())
        if not files:
            raise InputError.one(path, None, "no weka session files (*.json) in this directory")
    elif p.exists():
        files = [path]
    else:
        raise InputError.one(path, None, "trace file not found")
    if limit is not None:
        files = files[:limit]
    conversations = []
    problems: list[tuple[str, int | None, str]] = []
    for f in files:
        try:
            conversations.append(_read_weka_file(f))
        except InputError as exc:
            problems.extend(exc.problems)
            if len(problems) >= MAX_PROBLEMS:
                break
    if problems:
        raise InputError(problems)
    return conversations


def _read_weka_file(path: str) -> WekaConversation:
    """One conversation; sub-agent requests are merged into its timeline at their times."""
    with _open_binary(path) as f:
        data = f.read()
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise InputError.one(path, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError:
        raise InputError.one(path, None, "not UTF-8 text") from None
    problems = _Problems(path)
    where = _line_finder(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
        raise InputError.one(path, 1, "expected a JSON object with a 'requests' list")
    try:
        hash_block = _integer(doc, "block_size", 1) if "block_size" in doc else WEKA_DEFAULT_HASH_BLOCK
    except _Bad as bad:
        raise InputError.one(path, where("block_size"), str(bad)) from None
    conv_id = doc.get("id")
    conv_id = conv_id if isinstance(conv_id, str) and conv_id else Path(path).stem
    requests: list[TraceRequest] = []
    _collect_weka(doc["requests"], "requests", 0.0, hash_block, requests, problems, where)
    problems.raise_if_any()
    if not requests:
        raise InputError.one(path, None, "a conversation with no requests")
    requests.sort(key=lambda r: r.t)
    origin = requests[0].t  # the conversation starts with its first request
    for rec in requests:
        rec.t -= origin
    return WekaConversation(conv_id, hash_block, requests)


def _collect_weka(
    items: list, label: str, offset: float, hash_block: int, out: list, problems: _Problems, where
) -> None:
    """Flatten requests and sub-agent entries into one list.

    A sub-agent's requests carry times on the parent's clock when they are not before the
    sub-agent's own `t`; times that are (a sub-agent clock starting at 0) are shifted by it.
    """
    for i, item in enumerate(items):
        path = f"{label}[{i}]"
        try:
            if not isinstance(item, dict):
                raise _Bad("expected a JSON object")
            t = _number(item, "t") + offset
            if item.get("type") == "subagent":
                inner = _field(item, "requests")
                if not isinstance(inner, list):
                    raise _Bad("requests: expected a list")
                times = [r.get("t") for r in inner if isinstance(r, dict)]
                numeric = [x for x in times if isinstance(x, (int, float)) and not isinstance(x, bool)]
                shift = t if numeric and min(numeric) + offset < t else offset
                _collect_weka(inner, f"{path}.requests", shift, hash_block, out, problems, where)
                continue
            prompt = _integer(item, "in", 1)
            output = _integer(item, "out", 0)
            ids = _hash_ids(item, "hash_ids")
            if len(ids) > -(-prompt // hash_block):
                raise _Bad(f"hash_ids: {len(ids)} blocks of {hash_block} tokens is more than the {prompt} input tokens")
            think = _number(item, "think_time") if item.get("think_time") is not None else 0.0
        except _Bad as bad:
            problems.add(where(path), f"{path}: {bad}")
            if problems.full:
                return
            continue
        out.append(TraceRequest(t, prompt, output, ids, think))


def _line_finder(data: bytes):
    """Line numbers for problems found after parsing, where they can be known.

    `json` keeps no positions. A file on one line (how the weka traces are written) puts
    every problem on line 1; in a pretty-printed file the line is unknown and the message's
    JSON path (`requests[3].in`) says where.
    """
    if data.count(b"\n") <= 1:
        return lambda _path: 1
    return lambda _path: None
