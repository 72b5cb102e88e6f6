"""Which decode tokens llm-d's EPP re-predicts TPOT at: its Poisson token sampler.

Upstream: llm-d-inference-scheduler@520af47 (2026-05-17),
pkg/epp/framework/plugins/requestcontrol/dataproducer/predictedlatency/decode_token_sampler.go
(`decodeTokenSampler`). Created at a request's first token; the first sampled token is
2 + Poisson(mean) (token 1 is the TTFT); after each prediction the next one is the current
token + Poisson(mean); at most `max_samples` predictions (upstream's
`maxDecodeTokenSamplesForPrediction`, 0 = never: the plugin's default). `shouldPredict` asks
for *equality* with the current token, so an interval of 0 (possible below mean 30) puts the
next sample on a token already passed: sampling stops there, as upstream's does.

The Poisson draw is upstream's: Knuth's product of uniforms below mean 30, else the normal
approximation round(mean + sqrt(mean) x N(0, 1)), at least 1. Upstream seeds a private Go PRNG
per request from the FNV-64a hash of its request ID; here the uniforms and normals come from a
generator spawned from the router's seeded one (same seed, same samples; routing's own draws
untouched), so the draws follow upstream's distribution, not its Go bit stream.
"""

from __future__ import annotations

import math

import numpy as np

NORMAL_FROM = 30.0  # upstream switches from Knuth's algorithm to the normal approximation here


class TokenSampler:
    """One request's sampled tokens: `due(generated)` lists those reached, drawing the next."""

    def __init__(self, rng: np.random.Generator, mean: float, max_samples: int) -> None:
        self.rng = rng
        self.mean = mean
        self.max_samples = max_samples
        self.count = 0
        self.next_token = 2 + self.interval()

    def interval(self) -> int:
        """`poissonNext`: tokens to the next sample."""
        if self.mean <= 0:
            return 1
        if self.mean < NORMAL_FROM:
            return self.knuth()
        x = self.mean + math.sqrt(self.mean) * float(self.rng.standard_normal())
        return max(go_round(x), 1)

    def knuth(self) -> int:
        limit, k, p = math.exp(-self.mean), 0, 1.0
        while p > limit:
            k += 1
            p *= float(self.rng.random())
        return k - 1

    def due(self, generated: int) -> list[int]:
        """The sampled tokens among the first `generated`, not yet returned (upstream checks each
        token as it streams; between two of kvtui's policy hooks several may have passed)."""
        out = []
        while self.count < self.max_samples and self.next_token <= generated:
            out.append(self.next_token)
            self.count += 1  # `recordPrediction`
            if self.count < self.max_samples:
                nxt = self.next_token + self.interval()
                if nxt == self.next_token:  # interval 0: `shouldPredict` never matches again
                    self.count = self.max_samples
                self.next_token = nxt
        return out


def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round goes to even)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))
