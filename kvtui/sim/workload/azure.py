"""The Azure LLM inference traces of 2023 (Azure/AzurePublicDataset, published with the
Splitwise paper, ISCA 2024), read lazily.

CSV `TIMESTAMP,ContextTokens,GeneratedTokens` with timestamps like `2023-11-16 18:15:46.6805900`
and an optional header line. Lengths and arrival times only: no prefix information.
"""

from __future__ import annotations

from datetime import date

from kvtui.sim.workload.reader import MAX_TOKENS, Bad, TraceReader, TraceRequest, in_range


class AzureReader(TraceReader):
    format_name = "azure"

    def parse(self, number: int, raw: bytes) -> tuple[tuple[int, float], TraceRequest] | None:
        if raw.startswith(b"\0too long"):
            raise Bad("line too long: not a trace record")
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise Bad("not UTF-8 text") from None
        fields = [f.strip() for f in line.split(",")]
        if number == 1 and fields[0].lower() == "timestamp":
            return None  # the header
        if len(fields) < 3:
            raise Bad(f"expected 3 columns TIMESTAMP,ContextTokens,GeneratedTokens, got {len(fields)}")
        stamp = azure_time(fields[0])
        prompt = csv_int(fields[1], "ContextTokens", 1)
        output = csv_int(fields[2], "GeneratedTokens", 0)
        return stamp, TraceRequest(0.0, prompt, output)

    def ticks(self, raw: tuple[int, float], origin: tuple[int, float]) -> float:
        return (raw[0] - origin[0]) * 86400.0 + (raw[1] - origin[1])


def azure_time(text: str) -> tuple[int, float]:
    """`2023-11-16 18:15:46.6805900` -> (day ordinal, seconds into the day).

    Parsed by hand: the fraction has 7 digits, more than `datetime` accepts; and keeping the
    day apart keeps the seconds small enough for float precision.
    """
    day_part, _, clock = text.replace("T", " ").partition(" ")
    try:
        day = date.fromisoformat(day_part).toordinal()
        hours, minutes, seconds = clock.split(":")
        h, m, s = int(hours), int(minutes), float(seconds)
    except ValueError:
        raise Bad(f"TIMESTAMP: expected YYYY-MM-DD HH:MM:SS.fff, got {text[:60]!r}") from None
    if not (0 <= h < 24 and 0 <= m < 60 and 0 <= s < 61):  # 60.x: a leap second
        raise Bad(f"TIMESTAMP: no such time of day in {text[:60]!r}")
    return day, h * 3600 + m * 60 + s


def csv_int(text: str, name: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise Bad(f"{name}: expected a whole number, got {text[:60]!r}") from None
    return in_range(value, name, minimum, MAX_TOKENS)
