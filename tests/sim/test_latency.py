"""Latency models: the seed's linear arithmetic and the roofline's sanity figures."""

from __future__ import annotations

import random

import pytest

from kvtui.sim.latency import GRAPH_MAX_TOKENS, Batch, LinearModel, RooflineModel
from kvtui.profiles import CALIBRATION, HARDWARE, MODELS, TP_CALIBRATION, derived_kv_blocks, memory_fit


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
    # (0.9 x 79.18 GiB - 16.06 GB - 4.76 GiB measured peak) / (128 KiB x 16) ~ 26,391 blocks
    assert 26_000 < blocks < 27_500
    assert derived_kv_blocks(HARDWARE["l4"], MODELS["llama-3.1-70b"], 16, 0.9) == 0


def decode_ms(hw="h100-80gb", model="llama-3.1-8b", tp=1):
    """One batch-1 decode step with the calibrated defaults, in ms."""
    m = RooflineModel(HARDWARE[hw], MODELS[model], tensor_parallel=tp)
    return 1000 * m.iteration(Batch(decode_seqs=1, decode_context=1000, tokens_out=1))


def test_llama_70b_on_4_h100_decodes_at_batch_1_in_12_to_20_ms():
    assert 12 <= decode_ms(model="llama-3.1-70b", tp=4) <= 20


def test_tp2_is_faster_per_token_but_not_twice():
    one, two = decode_ms(tp=1), decode_ms(tp=2)
    assert two < one < 2 * two


def test_allreduce_follows_the_ring_formula():
    m = RooflineModel(HARDWARE["h100-80gb"], MODELS["llama-3.1-70b"], tensor_parallel=4)
    size = 10 * 8192 * 2
    one = 2 * 3 / 4 * size / 450e9 + 2 * 3 * 1.0e-6 + 12e-6  # bytes, ring steps, one launch
    assert m.allreduce_time(10) == pytest.approx(2 * 80 * one)
    assert RooflineModel(HARDWARE["h100-80gb"], MODELS["llama-3.1-8b"]).allreduce_time(10) == 0.0


def test_kv_is_sharded_over_tp_and_replicated_below_the_kv_head_count():
    m = MODELS["llama-3.1-8b"]  # 8 KV heads
    assert m.kv_bytes_per_token_per_gpu(4) == m.kv_bytes_per_token // 4
    assert m.kv_bytes_per_token_per_gpu(16) == m.kv_bytes_per_token // 8  # one head per GPU
    assert m.kv_bytes_per_token_per_gpu(1, "fp8") == m.kv_bytes_per_token // 2


def test_tp_capacity_counts_every_gpu_and_fp8_doubles_it():
    hw, m = HARDWARE["h100-80gb"], MODELS["llama-3.1-70b"]
    fit = memory_fit(hw, m, block_size=16, utilization=0.9, tp=4, batched_tokens=8192)
    # per GPU: 0.9 x 79.18 GiB - 35.3 GB weights - activations, over a quarter of a 320 KiB token
    assert fit.blocks == int(fit.kv_room // (327680 // 4 * 16))
    assert 29_000 < fit.blocks < 32_000  # no measured peak for 70B: the 0.77 GB estimate
    fp8 = memory_fit(hw, m, block_size=16, utilization=0.9, tp=4, kv_dtype="fp8", batched_tokens=8192)
    assert fp8.blocks in (2 * fit.blocks, 2 * fit.blocks + 1)
    assert memory_fit(hw, m, block_size=16, utilization=0.9).blocks == 0  # 141 GB on one GPU


@pytest.mark.parametrize("hw, model, tp", sorted(CALIBRATION["measured_ms"]))
def test_vllm_nightly_latency_benchmark(hw, model, tp):
    """vLLM's nightly latency test (8 x 32-token prompts, 128 output tokens, one batch).

    Source and figures: kvtui.profiles.CALIBRATION. The H100 8B figure is the one the
    default memory efficiency is fitted to (within 15 %); the others are cross-checks that
    must stay within 20 % (H200 is the farthest: the model runs it ~14-18 % too fast).
    """
    m = RooflineModel(HARDWARE[hw], MODELS[model], tensor_parallel=tp)
    batch, prompt, out = CALIBRATION["batch"], CALIBRATION["input_tokens"], CALIBRATION["output_tokens"]
    prefill = m.iteration(Batch(prefill_tokens=batch * prompt, prefill_context=batch * prompt * (prompt + 1) // 2, tokens_out=batch))
    total_ms = 1000 * (prefill + sum(m.decode_run(out - 1, batch, batch * (prompt + 1))))
    measured = CALIBRATION["measured_ms"][(hw, model, tp)]
    tolerance = 0.15 if (hw, model, tp) == ("h100-80gb", "llama-3.1-8b", 1) else 0.20
    assert total_ms == pytest.approx(measured, rel=tolerance)


def run_ten_prompts(tmp_path, hardware, model, tp, output_lens):
    """The ten prompts of the LambdaLabs runs, arriving at once on one node, chunked prefill off
    with a 2,048-token budget as vLLM 0.6 ran them; the result document."""
    import json

    from kvtui.cli import run_once
    from kvtui.scenario import load_scenario

    trace = tmp_path / "ten.jsonl"
    lines = [
        {"timestamp": 0, "input_length": n, "output_length": m, "hash_ids": [1000 * i + j for j in range(-(-n // 512))]}
        for i, (n, m) in enumerate(zip(TP_CALIBRATION["input_lens"], output_lens))
    ]
    trace.write_text("".join(json.dumps(x) + "\n" for x in lines))
    scenario = tmp_path / "cal.yaml"
    scenario.write_text(
        f"name: ttft-calibration\nmodel: {model}\nlatency: {{model: roofline}}\n"
        "router: {policy: round_robin}\n"
        f"cluster:\n  hardware: {hardware}\n  tensor_parallel: {tp}\n  nodes:\n"
        "    - {name: gpu, max_num_seqs: 256, chunked_prefill: false, max_num_batched_tokens: 2048}\n"
        f"workload:\n  trace: {{format: mooncake, path: {trace}}}\n"
    )
    _, doc = run_once(load_scenario(str(scenario)))
    assert doc["requests"]["completed"] == 10
    return doc


@pytest.mark.parametrize("hw, model, tp", sorted(TP_CALIBRATION["runs"]))
def test_published_runs_reproduced_end_to_end(tmp_path, hw, model, tp):
    """TTFT and TPOT of each cited LambdaLabs run (kvtui.profiles.TP_CALIBRATION) within 20 %
    through the engine: H100 8B at TP=1/2/4/8 and 70B at TP=4/8 (the TP terms are fitted to
    these, so the test checks the fit holds through the scheduler), A100 8B TP=1 (its compute
    efficiency is fitted to it). Without the eager floor 8B TP=8 prefill would take 12 ms, not 56."""
    _, outputs, ttft_ms, tpot_ms = TP_CALIBRATION["runs"][(hw, model, tp)]
    doc = run_ten_prompts(tmp_path, hw, model, tp, outputs)
    assert doc["latency_ms"]["ttft"]["p50"] == pytest.approx(ttft_ms, rel=0.20)
    assert doc["latency_ms"]["tpot"]["p50"] == pytest.approx(tpot_ms, rel=0.20)


def test_eager_floor_holds_only_tensor_parallel_batches_past_the_graphs():
    """The floor binds a TP>1 iteration of more than GRAPH_MAX_TOKENS tokens, never a smaller one
    (replayed as a CUDA graph) nor a TP=1 one."""
    hw, m = HARDWARE["h100-80gb"], MODELS["llama-3.1-8b"]
    floor = m.layers * hw.eager_layer_floor_s
    tp8 = RooflineModel(hw, m, tensor_parallel=8)
    big = Batch(prefill_tokens=GRAPH_MAX_TOKENS + 1, prefill_context=(GRAPH_MAX_TOKENS + 1) * 300, tokens_out=1)
    small = Batch(prefill_tokens=GRAPH_MAX_TOKENS, prefill_context=GRAPH_MAX_TOKENS * 300, tokens_out=1)
    assert tp8.iteration(big) >= floor > 3 * tp8.iteration(small)
    assert RooflineModel(hw, m).iteration(big) < floor * 0.6
    assert tp8.decode_run(1, GRAPH_MAX_TOKENS + 1, 1000)[0] >= floor


def test_decode_run_is_its_loop_bit_for_bit():
    """The memory-bound shortcut gives the very floats of the iteration-by-iteration loop, on the
    calibrated profiles and on efficiencies that put the compute/memory crossover inside a run."""
    rng = random.Random(3)
    models = [RooflineModel(HARDWARE[hw], MODELS[md], tensor_parallel=tp) for hw in HARDWARE for md in MODELS for tp in (1, 8)]
    models += [RooflineModel(HARDWARE["h100-80gb"], MODELS["llama-3.1-8b"], ce, me) for ce, me in ((0.001, 1.0), (0.01, 0.5))]
    for m in models:
        assert m.decode_run(0, 1, 100) == [] and m.decode_run(3, 0, 100) == m.decode_loop(3, 0, 100, m.overhead)
        # compute = memory where (f s + a c) / F = (w + b (c + s)) / B: probe around it
        slope = m.attn_flops / m.flops - m.kv_bytes / m.bandwidth
        for _ in range(300):
            seqs = rng.choice([1, rng.randint(1, 64), rng.randint(GRAPH_MAX_TOKENS - 2, GRAPH_MAX_TOKENS + 2)])
            cross = (m.weight_bytes / m.bandwidth + (m.kv_bytes / m.bandwidth - m.flops_per_token / m.flops) * seqs) / slope
            context = rng.choice([rng.randint(0, 10**6), max(0, int(cross) + rng.randint(-64, 64) * seqs)])
            k = rng.choice([1, 16, rng.randint(0, 64)])
            fixed = m.allreduce_time(seqs) + m.overhead
            want = m.decode_loop(k, seqs, context, fixed)
            assert [x.hex() for x in m.decode_run(k, seqs, context)] == [x.hex() for x in want]
