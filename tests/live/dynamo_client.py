"""Run with the `dynamo` peer's Python: send pre-tokenized requests to a Dynamo mocker worker
through Dynamo's own runtime client (file discovery, TCP request plane), one at a time.

argv: the number of requests, a JSON file to write the prompts to, a seed. Prompts share a few
48-token prefixes (three 16-token blocks) and end in fresh tokens, so the mocker's prefix cache
hits, stores and (with a small pool) evicts. The mocker stores a block that output tokens
complete too; prompts end at most 11 tokens into a block so that only prompt blocks are stored.
"""

import asyncio
import json
import random
import sys

from dynamo.common.utils.runtime import create_runtime


def prompts(n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    families = [[rng.randrange(3, 1000) for _ in range(48)] for _ in range(3)]
    tails = [r for r in range(1, 40) if r % 16 <= 11]  # 4 output tokens never complete a block
    return [list(rng.choice(families)) + [rng.randrange(3, 1000) for _ in range(rng.choice(tails))]
            for _ in range(n)]


async def send(all_prompts: list[list[int]]) -> None:
    runtime, _ = create_runtime("file", "tcp", "zmq")
    client = await runtime.endpoint("dynamo.backend.generate").client()
    await asyncio.wait_for(client.wait_for_instances(), 60)
    for tokens in all_prompts:
        request = {"model": "tiny", "token_ids": tokens, "eos_token_ids": [2], "annotations": [],
                   "stop_conditions": {"max_tokens": 4, "ignore_eos": True},
                   "sampling_options": {}, "output_options": {}}
        async for _ in await client.round_robin(request):
            pass
    runtime.shutdown()


if __name__ == "__main__":
    n, out, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    sent = prompts(n, seed)
    asyncio.run(send(sent))
    with open(out, "w") as f:
        json.dump(sent, f)
