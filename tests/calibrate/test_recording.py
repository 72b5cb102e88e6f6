"""A `kvtui live --record` directory made in route mode (the `Served` records the proxy writes,
written here as the recorder writes them) calibrates: one stage at its achieved rate, its own
lengths, the hit rate its forensics counted. The recording of real vLLM publishers behind the
proxy is calibrated in tests/live/test_live_route.py."""

from __future__ import annotations

import random

import pytest

from kvtui.calibrate.detect import read_report
from kvtui.cli import main
from kvtui.live.delivery import Scraped, Served, Watching
from kvtui.live.forensics import Forensics
from kvtui.live.metrics import EngineFigures
from kvtui.live.recording import Recorder


def made_route_recording(directory: str, requests: int = 80, seed: int = 5) -> None:
    rng = random.Random(seed)
    rec = Recorder(directory)
    rec.add(Watching("vllm-a", 0.0))
    rec.add(Scraped("vllm-a", 0.5, EngineFigures(num_gpu_blocks=4000, block_size=16)))
    at = 1.0
    for i in range(requests):
        at += rng.expovariate(4.0)
        prompt, out = rng.randint(300, 700), rng.randint(50, 150)
        ttft = 0.02 + prompt * 2e-5 + rng.random() * 0.005
        forensics = Forensics("vllm-a", -(-prompt // 16), 0, prompt // 32, (("cold", -(-prompt // 16) - prompt // 32),), 0, ())
        rec.add(Served("vllm-a", at, f"r{i}", "cache_aware", (("vllm-a", 1.0, 0, True),), forensics, ttft,
                       ttft + (out - 1) * 0.008, prompt, out))
    rec.flush()
    rec.close()


def test_a_route_mode_recording_is_a_report_and_calibrates(tmp_path, capsys):
    made_route_recording(str(tmp_path / "rec"))
    report = read_report(str(tmp_path / "rec"))
    (stage,) = report.stages
    assert report.format == "kvtui-recording" and stage.count == 80 and 3.0 < stage.rate < 5.5
    assert stage.measured["tpot"]["p50"] == pytest.approx(0.008)
    assert stage.hit_rate == pytest.approx(0.5, abs=0.05) and report.serving.kv_blocks == 4000
    assert main(["calibrate", str(tmp_path / "rec")]) == 0
    out = capsys.readouterr().out
    assert "prefix-cache hit rate real" in out and "per request (80)" in out


def test_a_recording_without_route_mode_is_refused(tmp_path, capsys):
    rec = Recorder(str(tmp_path / "rec"))
    rec.add(Watching("vllm-a", 0.0))
    rec.flush()
    rec.close()
    assert main(["calibrate", str(tmp_path / "rec")]) == 2
    assert "no requests timed by route mode" in capsys.readouterr().err
