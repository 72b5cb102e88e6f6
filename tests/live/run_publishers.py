"""By hand: real vLLM 0.33.0 publishers on loopback, fed by its real BlockPool, for trying
`kvtui live` (and recording a session for the docs) without a GPU.

    .venv/bin/python tests/live/run_publishers.py ENGINES_OUT.yaml [--engines 2] [--rate 5] [--seconds 60]

Writes an engines file naming each publisher's PUB and replay endpoints, then runs requests of
a shared-prefix workload (tests/live/live_support.py `prompts`) through each engine's pool,
`--rate` requests a second, round robin over the engines, publishing each request's events as one batch. Needs the
`vllm` peer (.ci/peers/vllm.sh).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from live import vllm_publishers as vp  # noqa: E402
from live.live_support import prompts  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("engines_file")
    p.add_argument("--engines", type=int, default=2)
    p.add_argument("--rate", type=float, default=5.0, help="requests a second, all engines together")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--blocks", type=int, default=96, help="GPU blocks of each engine's pool")
    args = p.parse_args()
    v = vp.load_new()
    engines = [(vp.Publisher(v.kv_events), vp.PoolSource(v, args.blocks)) for _ in range(args.engines)]
    Path(args.engines_file).write_text("engines:\n" + "".join(
        f"  - name: vllm-{i}\n    kv_events: {pub.endpoint}\n    replay: {pub.replay_endpoint}\n"
        for i, (pub, _) in enumerate(engines)))
    work = prompts(7, int(args.seconds * args.rate) + 1)
    try:
        for k, tokens in enumerate(work):  # round robin: shared prefixes land on every engine
            pub, pool = engines[k % len(engines)]
            pub.publish(pool.run(tokens))
            time.sleep(1 / args.rate)
    finally:
        for pub, _ in engines:
            pub.close()


if __name__ == "__main__":
    main()
