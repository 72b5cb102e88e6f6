"""The recording behind the docs' screenshot of a live session (screenshots/10-live.rec): real
vLLM 0.33.0 publishers fed by its real BlockPool (tests/live/vllm_publishers.py), watched and
recorded by kvtui's LiveSession; then the screenshot (screenshots/10-live.svg), the recording
opened in the live app at its end (kvtui/tui/make_screenshots.py, which makes it again from the
kept recording without vLLM; tests/tui/test_screenshots.py compares it).

    .venv/bin/python tests/live/make_live_screenshot.py

Needs the `vllm` peer (.ci/peers/vllm.sh). The workload is fixed (live_support.py `prompts`,
seed 7, round robin over two engines of 64 blocks), so the blocks, counts and index are the
same every run; the receive times in the header and the log are this run's own, which is why
the recording is kept rather than made again by the test.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from kvtui.live.engines import Engine  # noqa: E402
from kvtui.live.recording import Recorder  # noqa: E402
from kvtui.live.session import LiveSession  # noqa: E402
from kvtui.tui.make_screenshots import LIVE, LIVE_RECORDING, LIVE_SIZE, live_screenshot  # noqa: E402
from live import vllm_publishers as vp  # noqa: E402
from live.live_support import prompts  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def record(directory: str, requests: int = 160, blocks: int = 64) -> None:
    v = vp.load_new()
    engines = [(vp.Publisher(v.kv_events), vp.PoolSource(v, blocks)) for _ in range(2)]
    session = LiveSession([Engine(f"vllm-{i}", pub.endpoint, pub.replay_endpoint)
                           for i, (pub, _) in enumerate(engines)], Recorder(directory))
    try:
        session.run_for(1.0)  # subscribed before the first batch (else replay fills it in)
        for k, tokens in enumerate(prompts(7, requests)):
            pub, pool = engines[k % 2]
            pub.publish(pool.run(tokens))
            session.poll(0.01)
        for pub, _ in engines:
            pub.wait_sent()
        session.run_for(1.0)
    finally:
        session.close()
        for pub, _ in engines:
            pub.close()


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    shutil.rmtree(LIVE_RECORDING, ignore_errors=True)
    record(str(LIVE_RECORDING))
    (LIVE_RECORDING / "LOCK").unlink(missing_ok=True)  # the writer's lock, not part of the recording
    svg = asyncio.run(live_screenshot(LIVE_RECORDING, LIVE_SIZE))
    out = ROOT / "screenshots" / f"{LIVE}.svg"
    out.write_text(svg, encoding="utf-8")
    print(f"wrote {LIVE_RECORDING} and {out} ({time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
