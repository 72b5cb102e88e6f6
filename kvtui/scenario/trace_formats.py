"""The trace formats, one row each: the name (written here and nowhere else), the reader class
that parses it, whether a file holds one conversation (replayed by sessions) or one request per
line (replayed at its recorded times), the file name endings `kvtui trace stats` recognises,
and one line for the help. The scenario's `workload.trace.format` takes its choices from here,
so the validator knows the names without importing the engine.

Adding a format is one reader module under kvtui/sim/workload/ (a `TraceReader`) and one row
here (docs/architecture.md, "How to add a trace format").
"""

from __future__ import annotations

from typing import Literal, NamedTuple


class TraceFormat(NamedTuple):
    reader: str  # "module:Class", a kvtui.sim.workload.reader.TraceReader
    conversations: bool  # one conversation per file (sessions) rather than one request per line
    endings: tuple[str, ...]  # file name endings that name the format ("/" for a directory)
    about: str


TRACE_FORMATS: dict[str, TraceFormat] = {
    "mooncake": TraceFormat(
        "kvtui.sim.workload.mooncake:MooncakeReader", False, (".jsonl",), "JSONL with 512-token hash ids"
    ),
    "azure": TraceFormat("kvtui.sim.workload.azure:AzureReader", False, (".csv",), "CSV, lengths only"),
    "weka": TraceFormat(
        "kvtui.sim.workload.weka:WekaReader", True, ("/", ".json"), "one agent conversation per JSON file"
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
