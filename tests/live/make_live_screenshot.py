"""The docs' screenshot of a live session (screenshots/10-live.svg): real vLLM 0.33.0
publishers fed by its real BlockPool (tests/live/vllm_publishers.py), watched and recorded by
kvtui's LiveSession, the recording opened in the live app at its end.

    .venv/bin/python tests/live/make_live_screenshot.py [--out screenshots/10-live.svg]

Needs the `vllm` peer (.ci/peers/vllm.sh). The workload is fixed (test_live_vllm.py `prompts`,
seed 7, round robin over two engines of 64 blocks), so the blocks, counts and index are the
same every run; the receive times in the header and the log are this run's own.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from kvtui.live.engines import Engine  # noqa: E402
from kvtui.live.recording import Recorder, read_recording  # noqa: E402
from kvtui.live.session import LiveSession  # noqa: E402
from kvtui.run.live import LiveRun  # noqa: E402
from kvtui.tui.live_app import LiveApp  # noqa: E402
from kvtui.tui.record import _stable_svg  # noqa: E402
from live import vllm_publishers as vp  # noqa: E402
from live.test_live_vllm import prompts  # noqa: E402

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


async def screenshot(directory: str, size: tuple[int, int]) -> str:
    app = LiveApp(LiveRun(read_recording(directory)), "replay live.rec", theme="dark", fps=0)
    async with app.run_test(size=size) as pilot:
        await pilot.press("end")
        app.refresh_panels()
        await pilot.pause()
        return _stable_svg(app.export_screenshot(title="kvtui replay live.rec"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "screenshots" / "10-live.svg"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        record(f"{tmp}/live.rec")
        Path(args.out).write_text(asyncio.run(screenshot(f"{tmp}/live.rec", (120, 36))))
    print(f"wrote {args.out} ({time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
