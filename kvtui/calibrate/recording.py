"""A `kvtui live --record` directory made in route mode: the proxy timed every request it routed
(`Served`: TTFT to the first byte of the answer, E2E to its last, the prompt and completion
tokens, the prefix-cache blocks the engine served) and the scrapes carry each engine's KV blocks
and block size. The recording is one stage at its achieved rate; lengths are its requests' own;
the hit rate is the blocks served from cache over the prompt blocks."""

from __future__ import annotations

import numpy as np

from kvtui.calibrate.report import Lengths, Report, Requests, Serving, Stage
from kvtui.errors import InputError
from kvtui.live.delivery import Scraped, Served
from kvtui.live.recording import read_recording


def read(path: str) -> Report:
    deliveries = read_recording(path)
    served = [d for d in deliveries if isinstance(d, Served) and d.ttft_s is not None and d.e2e_s > 0]
    if len(served) < 2:
        raise InputError.one(path, None, "no requests timed by route mode in this recording (kvtui live --route POLICY --record DIR)")
    scrapes = [d.figures for d in deliveries if isinstance(d, Scraped) and d.figures.error is None]
    block = next((f.block_size for f in scrapes if f.block_size), None)
    blocks = next((f.num_gpu_blocks for f in scrapes if f.num_gpu_blocks), None)
    engines = {d.engine for d in served}
    prompt = np.array([d.prompt_tokens or d.forensics.prompt_blocks * (block or 16) for d in served], dtype=float)
    output = np.array([d.output_tokens for d in served], dtype=float)
    ttft = np.array([d.ttft_s for d in served])
    e2e = np.array([d.e2e_s for d in served])
    req = Requests(ttft, e2e, prompt, output)
    span = max(d.at for d in served) - min(d.at for d in served)
    rate = (len(served) - 1) / span if span > 0 else None
    measured = {"ttft": _q(ttft), "e2e": _q(e2e)}
    tpot = req.tpot[~np.isnan(req.tpot)]
    if len(tpot):
        measured["tpot"] = _q(tpot)
    hits = sum(d.forensics.hit for d in served) / max(1, sum(d.forensics.prompt_blocks for d in served))
    stage = Stage(0, rate, None if rate else 1, span, len(served), measured, req, hit_rate=hits,
                  prompt_mean=float(prompt.mean()))
    notes = [f"{len(engines)} engines in the recording: simulated as one" if len(engines) > 1 else ""]
    if not len(tpot):
        notes.append("no request with more than one output token: no TPOT to fit")
    return Report("kvtui-recording", path, (stage,), Serving(kv_blocks=blocks, block_size=block),
                  prompt=_lengths(prompt), output=_lengths(np.maximum(output, 1)), notes=tuple(n for n in notes if n))


def _q(values: np.ndarray) -> dict[str, float]:
    p50, p90 = np.percentile(values, [50, 90])
    return {"p50": float(p50), "p90": float(p90)}


def _lengths(values: np.ndarray) -> Lengths:
    return Lengths(float(values.mean()), float(values.std()), float(values.min()), float(values.max()))
