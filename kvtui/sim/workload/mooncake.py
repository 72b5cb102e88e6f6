"""Mooncake's trace format (kvcache-ai/Mooncake, `FAST25-release/traces/`), read lazily.

One JSON object per line: `{"timestamp": ms, "input_length": tokens, "output_length": tokens,
"hash_ids": [int, ...]}`. Each hash id names a block of the prompt (512 tokens: the row's
`hash_block`; `len(hash_ids) == ceil(input_length / hash_block)`, checked), and the ids are
prefix-chained: equal id prefixes mean equal prompt prefixes. The timestamp's unit (ms) is the
row's `ticks_per_s`.
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


class MooncakeReader(TraceReader):
    format_name = "mooncake"

    def parse(self, number_: int, line: bytes) -> tuple[float, TraceRequest]:
        rec = json_object(line)
        stamp = number(rec, "timestamp", 0.0, 2.0**53)  # whole ticks stay exact below 2**53
        prompt = integer(rec, "input_length", 1)
        output = integer(rec, "output_length", 0)
        ids = hash_ids(rec, "hash_ids")
        block = self.hash_block
        want = -(-prompt // block)
        if len(ids) != want:
            raise Bad(f"hash_ids: {len(ids)} ids for input_length {prompt}, expected ceil({prompt}/{block}) = {want}")
        return stamp, TraceRequest(0.0, prompt, output, ids)

    def ticks(self, raw: float, origin: float) -> float:
        return raw - origin


