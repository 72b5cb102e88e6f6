"""The `keyed` trace format: one request per line with one key per full KV block of its prompt.

`{"t": seconds, "prompt": tokens, "output": tokens, "block_size": tokens, "keys": [int, ...]}`,
`len(keys) == prompt // block_size`. It is what a route-mode recording knows of its traffic
(kvtui/run/recorded_traffic.py writes it): the proxy keyed each prompt's full blocks with
kvtui's chained hash over the engine's own token ids, so equal key prefixes are equal prompt
prefixes, block for block. Every line states the block size its keys were made at and all
must agree; the replay keys the simulator's blocks from them (kvtui/sim/workload/trace_keys.py:
at the same block size, one simulated block per recorded key).
"""

from __future__ import annotations

from kvtui.sim.workload.reader import Bad, TraceReader, TraceRequest, hash_ids, integer, json_object, number


class KeyedReader(TraceReader):
    format_name = "keyed"

    def parse(self, number_: int, line: bytes) -> tuple[float, TraceRequest]:
        rec = json_object(line)
        t = number(rec, "t", 0.0, 2.0**53)
        prompt = integer(rec, "prompt", 1)
        output = integer(rec, "output", 0)
        block = integer(rec, "block_size", 1, 1 << 16)
        if self.hash_block and block != self.hash_block:
            raise Bad(f"block_size: {block}, but the lines before have {self.hash_block}")
        self.hash_block = block
        keys = hash_ids(rec, "keys")
        if len(keys) != prompt // block:
            raise Bad(f"keys: {len(keys)} keys for prompt {prompt}, expected {prompt} // {block} = {prompt // block}")
        return t, TraceRequest(0.0, prompt, output, keys)

    def ticks(self, raw: float, origin: float) -> float:
        return raw - origin
