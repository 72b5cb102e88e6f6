"""Mooncake's trace format (kvcache-ai/Mooncake, `FAST25-release/traces/`), read lazily.

One JSON object per line: `{"timestamp": ms, "input_length": tokens, "output_length": tokens,
"hash_ids": [int, ...]}`. Each hash id names a 512-token block of the prompt
(`len(hash_ids) == ceil(input_length / 512)`, checked), and the ids are prefix-chained: equal
id prefixes mean equal prompt prefixes.
"""

from __future__ import annotations

from kvtui.sim.workload.reader import (
    Bad,
    TraceReader,
    TraceRequest,
    hash_ids,
    integer,
    json_object,
    number,
)

MOONCAKE_HASH_BLOCK = 512


class MooncakeReader(TraceReader):
    hash_block = MOONCAKE_HASH_BLOCK

    def parse(self, number_: int, line: bytes) -> tuple[float, TraceRequest]:
        rec = json_object(line)
        ms = number(rec, "timestamp", 0.0, 2.0**53)  # whole milliseconds stay exact below 2**53
        prompt = integer(rec, "input_length", 1)
        output = integer(rec, "output_length", 0)
        ids = hash_ids(rec, "hash_ids")
        want = -(-prompt // MOONCAKE_HASH_BLOCK)
        if len(ids) != want:
            raise Bad(
                f"hash_ids: {len(ids)} ids for input_length {prompt}, "
                f"expected ceil({prompt}/{MOONCAKE_HASH_BLOCK}) = {want}"
            )
        return ms, TraceRequest(0.0, prompt, output, ids)

    def seconds(self, raw: float, origin: float) -> float:
        return (raw - origin) / 1000.0


