"""The trace formats, one row each: everything the replay and `kvtui trace stats` need to know
about a format, written here and nowhere else.

A row names the reader class that parses the format, whether a file holds one conversation
(replayed by sessions) or one request per line (replayed at its recorded times), the file name
endings and the content that identify it, and how its records become requests: how many tokens
one hash id names (`hash_block`, None for a format without prefix information; a weka file may
state its own, which wins), the group label of every request when there are no hash ids
(`group`), how many units of its time field make a second (`ticks_per_s`) and whether those times are
rounded to buckets that the replay spreads (`bucketed`). The scenario's
`workload.trace.format` takes its choices from here, so the validator knows the names without
importing the engine.

Adding a format is one reader module under kvtui/sim/workload/ (a `TraceReader`) and one row
here (docs/architecture.md, "How to add a trace format").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, NamedTuple

SNIFF_BYTES = 4096
"""How much of a file's start its content is recognised by (a Mooncake line is ~200 bytes, a
weka document states its keys at the top)."""


class TraceFormat(NamedTuple):
    reader: str  # "module:Class", a kvtui.sim.workload.reader.TraceReader
    conversations: bool  # one conversation per file (sessions) rather than one request per line
    endings: tuple[str, ...]  # file name endings that name the format ("/" for a directory)
    about: str
    hash_block: int | None  # tokens per hash id; None: no prefix information
    group: str | None  # every request's group label when there are no hash ids (else by prefix or conversation)
    ticks_per_s: float  # units of the raw time field in a second
    bucketed: bool  # times are rounded to buckets: the replay spreads each run of equal times
    content: re.Pattern[bytes]  # matches the start of a file in this format


TRACE_FORMATS: dict[str, TraceFormat] = {
    "mooncake": TraceFormat(
        "kvtui.sim.workload.mooncake:MooncakeReader", False, (".jsonl",), "JSONL with 512-token hash ids",
        hash_block=512, group=None, ticks_per_s=1000.0, bucketed=True,  # ms; the conversation trace's 3 s buckets
        content=re.compile(rb'\A\s*\{(?=[^\n]*"input_length")(?=[^\n]*"hash_ids")'),  # on its first line
    ),
    "azure": TraceFormat(
        "kvtui.sim.workload.azure:AzureReader", False, (".csv",), "CSV, lengths only",
        hash_block=None, group="azure", ticks_per_s=1.0, bucketed=False,
        content=re.compile(rb"\A\s*(?i:timestamp\s*,|\d{4}-\d\d-\d\d[ T][\d:.]+\s*,\s*\d+\s*,\s*\d+\s*(\n|\Z))"),
    ),
    "weka": TraceFormat(
        "kvtui.sim.workload.weka:WekaReader", True, ("/", ".json"), "one agent conversation per JSON file",
        hash_block=64, group=None, ticks_per_s=1.0, bucketed=False,
        content=re.compile(rb'\A\s*\{(?=[\s\S]*"requests"\s*:)'),
    ),
    "keyed": TraceFormat(
        "kvtui.sim.workload.keyed:KeyedReader", False, (), "JSONL with one key per KV block (a route-mode recording's requests)",
        hash_block=0, group=None, ticks_per_s=1.0, bucketed=False,  # 0: each line states its block size
        content=re.compile(rb'\A\s*\{(?=[^\n]*"block_size")(?=[^\n]*"keys")'),
    ),
}

TRACE_FORMAT_NAMES: tuple[str, ...] = tuple(TRACE_FORMATS)
TraceFormatName = Literal[TRACE_FORMAT_NAMES]  # type: ignore[valid-type]  # the names, as a scenario type


def is_conversations(name: str) -> bool:
    """Whether the format is replayed by conversations (sessions) rather than by line."""
    return TRACE_FORMATS[name].conversations


def format_of_file(is_dir: bool, suffix: str) -> str | None:
    """The format a file name says (a directory counts as "/"), or None."""
    ending = "/" if is_dir else suffix
    return next((name for name, f in TRACE_FORMATS.items() if ending in f.endings), None)


def format_of_content(head: bytes) -> str | None:
    """The format the start of a file is written in, or None when no row's content matches."""
    return next((name for name, f in TRACE_FORMATS.items() if f.content.match(head)), None)


def format_of_path(path: str) -> str | None:
    """The format of a trace file by what it holds, else by its name (a directory: weka's
    sessions); None when neither says. A file that cannot be read is left to the reader to report."""
    p = Path(path)
    if p.is_file():
        try:
            with open(p, "rb") as f:
                found = format_of_content(f.read(SNIFF_BYTES))
        except OSError:
            found = None
        if found is not None:
            return found
    return format_of_file(p.is_dir(), p.suffix)
