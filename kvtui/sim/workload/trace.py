"""Trace replay: recorded workloads instead of synthetic groups (the engine's workload interface).

Three formats, one reader module each (see shared/data/README.md for where they come from):
`mooncake` (JSONL with 512-token hash ids), `azure` (CSV, lengths only) and `weka` (one agent
conversation per JSON file, 64-token hash ids scoped to it). Keys: `trace_keys`. What a format's
records mean (tokens per hash id, the group label of a format without hash ids, time units,
bucketed times) is its row in kvtui/scenario/trace_formats.py, read here and by the readers.

Streamed: construction reads the trace once to validate it (a broken trace stops the run
before it starts, with `file:line: message`, never a traceback) and keeps only what replay
needs up front: the arrival times (mooncake, azure) or the file list (weka). The replay reads
the file again, record by record, as requests fall due.

Weka and the 0 % hit rate of `limit: 50, time_scale: 100`. The agent conversations have no
global clock, so the scenario's arrival process starts them (default: Poisson at 1 session/s).
Their own turns are tens of seconds apart (`t`, `think_time`), and `time_scale: 100`
*stretches* those gaps a hundredfold. Before, the sessions were also silently replayed as
copies, cycling through the files without end; each copy is a new conversation with keys of
its own (hash ids are scoped to one conversation). So the 50 requests were the first turns of
50 conversations (12 files, then copies #2 to #5), started one second apart, and no request
ever had an earlier turn of its own conversation to reuse: 0 %, although neighbouring turns of
one conversation share ~97 % of their hash ids. Now copies are explicit (`copies`, default 1,
and the count is reported): with 12 conversations the same 50 requests are 12 first turns and
38 later turns that find their prefix. (`time_scale` below 1 compresses the gaps: 0.01 plays
an agent's minutes in seconds.)
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
from kvtui.sim import loop

from kvtui.errors import InputError
from kvtui.scenario.model import Arrival, Trace
from kvtui.scenario.trace_formats import TRACE_FORMATS
from kvtui.sim.request import Request
from kvtui.sim.workload.arrivals import Submit, start_arrivals
from kvtui.scenario.trace_shape import TraceShape
from kvtui.sim.workload.reader import TraceReader, TraceRequest, make_reader, reader_class
from kvtui.sim.workload.slo import slo_fields
from kvtui.sim.workload.trace_keys import HashChain, covered_keys, own_keys
from kvtui.sim.workload.weka import WekaConversation, WekaReader

LABELLED_PREFIXES = 8
"""Requests with hash ids (mooncake) are grouped by their first one, so the screen can colour
shared prefixes; the first this-many distinct ids get a label of their own, the rest are "other"."""


def line_reader(trace: Trace) -> TraceReader:
    return make_reader(trace.format, trace.path, trace.skip_invalid)


def selected(records: Iterator[TraceRequest], start_s: float, limit: int | None) -> Iterator[TraceRequest]:
    """The records a replay uses: from `start_s` on, at most `limit`."""
    n = 0
    for rec in records:
        if rec.t < start_s:
            continue
        yield rec
        n += 1
        if limit is not None and n >= limit:
            return


class TraceWorkload:
    """Replays a trace.

    Mooncake and azure requests arrive at their recorded times and never wait for each other
    (open loop). Weka conversations start by the scenario's arrival process, in file name order,
    each once (or `copies` times: copies are new conversations with keys of their own); within
    one, a turn goes at its recorded time but never before the previous reply has come back
    plus the recorded think time, since its prompt contains it. A rejected or failed turn ends
    the conversation, like a synthetic session; the turns it cut are counted (`turns_cut`). `start_s` does not apply to weka (it has no
    global timeline); `time_scale` scales its in-session gaps.
    """

    def __init__(self, trace: Trace, arrival: Arrival, block_size: int, rng: np.random.Generator):
        self.trace = trace
        self.arrival = arrival
        self.block_size = block_size
        self.rng = rng
        self.times: list[float] = []  # mooncake/azure: when each replayed request is due
        self.weka: WekaReader | None = None
        self.conversation_ids: list[str] = []
        self.weka_requests = 0  # requests in the weka files (one copy each)
        self.shape = TraceShape()  # what the scan saw (one copy), for the cost estimate
        self.form = TRACE_FORMATS[trace.format]
        self.hash_block = self.form.hash_block  # the reader's own (a weka file's is its conversation's)
        if self.form.conversations:
            self._scan_weka()
        else:
            self._scan_lines()
        self.requests_issued = 0
        self.sessions_started = 0
        self.turns_cut = 0  # weka: later turns of conversations a rejected or failed turn ended
        self.conversations_cut = 0
        self._slo = slo_fields(trace.slo, trace.sheddable)  # the Request fields every replayed call carries
        self._chain = HashChain(trace.format.encode())
        self._labels: dict[int, str] = {}
        self.env: loop.Environment | None = None
        self._submit: Submit | None = None

    # -- the validating pass -----------------------------------------------------------------
    def _scan_lines(self) -> None:
        reader = line_reader(self.trace)
        stamps = []
        for rec in selected(reader.records(), self.trace.start_s, self.trace.limit):
            stamps.append(rec.t)
            self.shape.add(rec)
        self.hash_block = reader.hash_block  # after the scan: a keyed trace states its own
        self.skipped = reader.skipped
        if not stamps:
            raise InputError.one(self.trace.path, None, f"no requests at or after start_s={self.trace.start_s:g}")
        start, scale = self.trace.start_s, self.trace.time_scale
        if self.form.bucketed:
            stamps = spread_ties(stamps)
            self.times = [max(0.0, t - start) * scale for t in stamps]
        else:
            self.times = [(t - start) * scale for t in stamps]

    def _scan_weka(self) -> None:
        self.weka = reader_class(self.trace.format)(self.trace.path, self.trace.skip_invalid, self.trace.limit, self.form)
        for conv in self.weka.conversations():
            self.conversation_ids.append(conv.id)
            self.weka_requests += len(conv.requests)
            for rec in conv.requests:
                self.shape.add(rec)
        self.skipped = self.weka.skipped

    # -- what the CLI reports ------------------------------------------------------------------
    @property
    def total_requests(self) -> int | None:
        """Requests the replay will issue at most (for progress)."""
        if not self.form.conversations:
            return len(self.times)
        total = self.weka_requests * self.trace.copies
        return total if self.trace.limit is None else min(total, self.trace.limit)

    def notes(self) -> list[str]:
        """What the user must know about this replay: skipped records, copies."""
        out = []
        if self.skipped:
            out.append(f"{self.trace.path}: skipped {self.skipped} invalid record(s) (skip_invalid: true)")
        if self.form.conversations:
            n = len(self.conversation_ids)
            copies = self.trace.copies
            out.append(
                f"weka replay: {n} conversation(s) x {copies} cop{'y' if copies == 1 else 'ies'} = {n * copies} "
                f"({n * (copies - 1)} replayed as copies with keys of their own), up to {self.total_requests} requests"
            )
        if self.turns_cut:
            out.append(f"weka replay: {self.turns_cut} later turn(s) of {self.conversations_cut} conversation(s) not sent: "
                       "a rejected or failed turn ends its conversation (its next prompt would contain the missing reply)")
        return out

    def start(self, env: loop.Environment, submit: Submit) -> None:
        self.env = env
        self._submit = submit
        if self.form.conversations:
            start_arrivals(env, self.arrival, self.rng, self._may_start, self._start_conversation)
        else:
            env.process(self._replay())

    def system_prompt_keys(self, group_name: str) -> list[int]:
        """Traces have no declared system prompts to pin."""
        return []

    # -- open-loop replay (mooncake, azure) ------------------------------------------------
    def _replay(self):
        env = self.env
        records = selected(line_reader(self.trace).records(), self.trace.start_s, self.trace.limit)
        for due, rec in zip(self.times, records):
            if due > env.now:
                yield env.timeout(due - env.now)
            self._submit(self._open_loop_request(rec))

    def _open_loop_request(self, rec: TraceRequest) -> Request:
        self.requests_issued += 1
        n = self.requests_issued
        rid = f"req-{n}"
        bs = self.block_size
        total_blocks = (rec.prompt + rec.output) // bs
        if rec.hash_ids is None:  # lengths only (azure): nothing is shared
            group = self.form.group or self.trace.format
            keys = own_keys(group.encode(), n, 0, total_blocks)
        else:
            keys = covered_keys(rec.hash_ids, self.hash_block, rec.prompt, bs, self._chain)
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
        plays = len(self.conversation_ids) * self.trace.copies
        return self.sessions_started < plays and not self._at_limit()

    def _at_limit(self) -> bool:
        return self.trace.limit is not None and self.requests_issued >= self.trace.limit

    def _start_conversation(self) -> loop.Process:
        files = self.weka.files
        conv = self.weka.read(files[self.sessions_started % len(files)])  # validated at construction
        replay = self.sessions_started // len(files) + 1
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
                self.turns_cut += len(conv.requests) - turn  # counted, never dropped silently
                self.conversations_cut += 1
                return
            previous_end = env.now


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
