"""Latency models: the seed's linear arithmetic and the roofline's sanity figures."""

from __future__ import annotations

import pytest

from kvtui.sim.latency import Batch, LinearModel, RooflineModel
from kvtui.sim.profiles import HARDWARE, MODELS, derived_kv_blocks


def roofline(hw="h100-80gb", model="llama-3.1-8b"):
    return RooflineModel(HARDWARE[hw], MODELS[model], 0.5, 0.8, 0.0005)


def test_llama_8b_on_h100_decodes_at_batch_1_in_5_to_8_ms():
    t = roofline().iteration(Batch(decode_seqs=1, decode_context=1000, tokens_out=1))
    assert 0.005 <= t <= 0.008


def test_decode_is_memory_bound_and_grows_with_batch_and_context():
    m = roofline()
    small = m.iteration(Batch(decode_seqs=1, decode_context=512, tokens_out=1))
    big_batch = m.iteration(Batch(decode_seqs=64, decode_context=64 * 512, tokens_out=64))
    long_ctx = m.iteration(Batch(decode_seqs=1, decode_context=100_000, tokens_out=1))
    assert big_batch > small and long_ctx > small
    assert m.decode_run(3, 4, 2000) == sorted(m.decode_run(3, 4, 2000))


def test_prefill_is_compute_bound():
    m = roofline()
    t = m.iteration(Batch(prefill_tokens=4096, prefill_context=4096 * 2048, tokens_out=1))
    flops_time = 2 * MODELS["llama-3.1-8b"].params * 4096 / (HARDWARE["h100-80gb"].peak_flops * 0.5)
    assert t > flops_time  # at least the matmul time; weights alone would take ~6 ms
    assert t > 0.1


def test_linear_model_matches_the_seed_arithmetic():
    m = LinearModel(0.001, 0.001)
    # prefill of 1,200 uncached tokens yields the first token: 1,200 ms + 1 ms
    assert m.iteration(Batch(prefill_tokens=1200, tokens_out=1)) == pytest.approx(1.201)
    assert sum(m.decode_run(199, 1, 0)) == pytest.approx(0.199)


def test_kv_bytes_per_token_and_derived_capacity():
    assert MODELS["llama-3.1-8b"].kv_bytes_per_token == 131072
    assert MODELS["llama-3.1-70b"].kv_bytes_per_token == 327680
    assert MODELS["qwen2.5-7b"].kv_bytes_per_token == 57344
    blocks = derived_kv_blocks(HARDWARE["h100-80gb"], MODELS["llama-3.1-8b"], 16, 0.9)
    # (72 GB - 16.06 GB) / (128 KiB x 16) ~ 26,674 blocks
    assert 26_000 < blocks < 27_500
    assert derived_kv_blocks(HARDWARE["l4"], MODELS["llama-3.1-70b"], 16, 0.9) == 0
