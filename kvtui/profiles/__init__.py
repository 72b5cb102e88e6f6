"""Hardware and model profiles: the figures the roofline latency model and KV sizing use.

The shipped figures live in data files beside this module (`hardware.yaml`, `models.yaml`),
each entry with a `source:` naming where its numbers come from. A scenario may add or replace
profiles with the same keys under its top-level `hardware:` and `models:` mappings; `catalog`
merges the two.

This package imports neither `kvtui.sim` nor `kvtui.scenario`: the scenario loader (which
checks names and memory fit) and the engine (which builds latency models) both read profiles
from here, so neither has to import the other.

Memory arithmetic (`memory_fit`) follows vLLM's sizing: the KV cache gets what is left of
`gpu_memory_utilization x total memory` (as the driver reports it) on each GPU after that GPU's
shard of the weights and the peak of a profiling pass (vLLM v1 `Worker.determine_available_memory`,
which profiles a dummy batch of `max_num_batched_tokens`); kvtui estimates the activations per
token and, for a model whose profile carries vLLM's measured peak, adds what the estimate misses.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, Mapping

import yaml

GB = 1e9
GiB = 1024**3

# Bytes per cached K or V element by `kv_cache_dtype` (vLLM's --kv-cache-dtype auto/fp8).
KV_DTYPE_BYTES = {"bf16": 2, "fp8": 1}

# The published measurement the default memory efficiency is fitted to, and the cross-checks.
# vLLM's own nightly "Performance Benchmark" (Buildkite pipeline vllm/performance-benchmark,
# latency tests of .buildkite/nightly-benchmarks, run with benchmarks/benchmark_latency.py):
# 8 prompts of 32 tokens, 128 output tokens each, one batch; the end-to-end latency is one
# 256-token prefill plus 127 decode steps at batch 8, i.e. a per-token time (TPOT) of about
# latency / 128 at low load. Pages as captured:
#   H100 (8xH100 runner): https://buildkite.com/elastic/enterprise-search-ruby/builds/571
#     (a mirror of the vLLM pipeline page) latency_llama8B_tp1 997.542 ms mean,
#     latency_llama70B_tp4 2444.47 ms mean;
#   H200: https://buildkite.com/vllm/performance-benchmark/builds/9515 latency_llama8B_tp1
#     833.421 ms, latency_llama70B_tp4 2077.53 ms;
#   A100-SXM4-80GB: https://buildkite.com/julialang/opencl-dot-jl/builds/306 (mirror)
#     latency_llama8B_tp1 1585.43 ms.
# Fitted: memory_efficiency 0.66 (with the 0.5 ms iteration overhead) reproduces the H100 8B
# figure (1003.9 ms, +0.6 %). Cross-checks with the same shares and the TP terms of
# TP_CALIBRATION: A100 8B 1612.8 ms (+1.7 %), H100 70B TP=4 2500.4 ms (+2.3 %), H200 8B 723.5 ms
# (-13.2 %), H200 70B TP=4 1886.8 ms (-9.2 %; -18.4 % before the collective launch cost). This benchmark's
# prefill is 256 tokens (~7 ms of ~1 s at TP=1), so it says little about the prefill share;
# that is calibrated on a TTFT (TTFT_CALIBRATION below).
CALIBRATION: dict[str, Any] = {
    "source": "vLLM nightly performance benchmark, latency tests (input 32, output 128, batch 8)",
    "urls": (
        "https://buildkite.com/elastic/enterprise-search-ruby/builds/571",
        "https://buildkite.com/vllm/performance-benchmark/builds/9515",
        "https://buildkite.com/julialang/opencl-dot-jl/builds/306",
    ),
    "batch": 8, "input_tokens": 32, "output_tokens": 128,
    "measured_ms": {
        ("h100-80gb", "llama-3.1-8b", 1): 997.542,
        ("h100-80gb", "llama-3.1-70b", 4): 2444.47,
        ("h200", "llama-3.1-8b", 1): 833.421,
        ("h200", "llama-3.1-70b", 4): 2077.53,
        ("a100-80gb", "llama-3.1-8b", 1): 1585.43,
    },
}

# The measurement the default compute efficiency is fitted to: a TTFT with stated prompts.
# LambdaLabsML/vllm-benchmark, results/prompt_10/1xH100-80GB-SXM/
# Meta-Llama-3-8B-Instruct_tp1_len2048.json (2024-09-07, vLLM 0.6, benchmark_serving.py,
# --max-model-len 2048): 10 ShareGPT prompts sent at once (request rate inf) on one H100 SXM;
# with chunked prefill off at that length vLLM prefills all 1,369 prompt tokens in one batch,
# so every request's TTFT is that one iteration (measured 61.9-63.4 ms, mean 62.4 ms). Median
# TPOT 7.56 ms. Llama-3-8B has Llama-3.1-8B's architecture (32 layers, hidden 4096, 8 KV heads,
# MLP 14336, vocabulary 128,256), so its FLOPs and bytes are the same. The figure includes the
# OpenAI server's own overhead (HTTP, tokenisation), which the fit folds into the efficiency.
# Fitted: compute_efficiency 0.36 gives 62.6 ms (+0.2 %); TPOT with the decode calibration
# above: 7.8-7.9 ms for batches of 1-10 (+3 %). A cross-check with no fit: vLLM PR #7172
# (Llama-3.1-8B-Instruct, one H100, 550 in / 150 out at 8 QPS) reports P90 TTFT 47.9 ms and
# P90 ITL 12.9 ms, P90 E2E 2.0 s. kvtui on the same load (roofline, 512-token chunked prefill
# as vLLM 0.5 enabled for long-context models): P90 TTFT 55.0 ms (+15 %), P90 ITL 8.6 ms
# (-33 %), P90 E2E 1.56 s. The gap is decode: vLLM 0.5.4 paid several ms of CPU work per
# step that later releases (async output processing, multi-step scheduling) removed; kvtui's
# per-iteration overhead is 0.5 ms.
TTFT_CALIBRATION: dict[str, Any] = {
    "source": "LambdaLabsML/vllm-benchmark results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json",
    "url": "https://github.com/LambdaLabsML/vllm-benchmark",
    "hardware": "h100-80gb",
    "model": "llama-3.1-8b",
    "input_lens": (13, 25, 27, 10, 329, 29, 399, 328, 4, 205),
    "output_lens": (120, 429, 233, 194, 101, 741, 9, 3, 6, 31),
    "max_num_batched_tokens": 2048,
    "mean_ttft_ms": 62.426,
    "median_tpot_ms": 7.558,
}


# The runs the tensor-parallel terms (ring step latency, collective launch, eager layer floor) are
# fitted to, and the A100 compute efficiency: LambdaLabsML/vllm-benchmark at commit
# a4f9f4371a1ccac781293837fce2bce0cc6d25cc (H100, 2024-09-07) and f093afe94aacfb282ac40fef31c94a0010b37e5e
# (A100, 2024-09-08), files results/prompt_10/<N>x<GPU>-80GB-SXM/<model>_tp<N>_len2048.json:
# vLLM 0.6 benchmark_serving.py, the ten prompts of TTFT_CALIBRATION sent at once, prefilled in one
# batch (chunked prefill off at max-model-len 2048). TTFT is the median over requests that streamed
# a token (Llama-3-70B answered two prompts with no token: TTFT 0 in the file, left out; kvtui
# gives them one, as a request must produce one); TPOT is
# the file's median_tpot_ms. Meta-Llama-3-8B/70B-Instruct have Llama-3.1-8B/70B's architecture.
# The runs stream ten tokens per chunk (multi-step scheduling), so ITL is not a per-token time;
# TPOT is. Fitted with H100's efficiencies kept: every run within 11 % (tests/sim/test_latency.py).
TP_CALIBRATION: dict[str, Any] = {
    "source": "LambdaLabsML/vllm-benchmark results/prompt_10 (vLLM 0.6, 10 prompts, 1,369 prompt tokens)",
    "url": "https://github.com/LambdaLabsML/vllm-benchmark",
    "input_lens": TTFT_CALIBRATION["input_lens"],
    "runs": {
        # (hardware, model, tp): (file, output_lens, median TTFT ms, median TPOT ms)
        ("h100-80gb", "llama-3.1-8b", 1): ("1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json",
                                           (120, 429, 233, 194, 101, 741, 9, 3, 6, 31), 62.426, 7.558),
        ("h100-80gb", "llama-3.1-8b", 2): ("2xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp2_len2048.json",
                                           (120, 510, 233, 194, 101, 741, 9, 3, 6, 31), 53.506, 5.257),
        ("h100-80gb", "llama-3.1-8b", 4): ("4xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp4_len2048.json",
                                           (120, 414, 233, 194, 101, 741, 9, 3, 6, 31), 47.918, 3.882),
        ("h100-80gb", "llama-3.1-8b", 8): ("8xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp8_len2048.json",
                                           (120, 425, 233, 194, 101, 741, 9, 3, 6, 31), 55.882, 3.260),
        ("h100-80gb", "llama-3.1-70b", 4): ("4xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp4_len2048.json",
                                            (120, 661, 233, 194, 101, 741, 1, 1, 6, 35), 140.562, 18.117),
        ("h100-80gb", "llama-3.1-70b", 8): ("8xH100-80GB-SXM/Meta-Llama-3-70B-Instruct_tp8_len2048.json",
                                            (120, 624, 233, 194, 101, 741, 1, 1, 6, 35), 122.280, 12.179),
        ("a100-80gb", "llama-3.1-8b", 1): ("1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json",
                                           (120, 507, 233, 194, 101, 741, 9, 3, 6, 31), 126.729, 12.014),
    },
}


FSYNC_S = 100e-6
"""One fdatasync when a profile gives none: the ~100 us kvtui/store/metadata.py's docstring reports
for benchmarks/wal_bench.py on the machine it was written on (a datacenter NVMe is 20-100 us)."""


@dataclass(frozen=True)
class Hardware:
    """One GPU: memory, dense BF16 peak, memory bandwidth, and its link to its TP peers."""

    name: str
    memory_bytes: float
    peak_flops: float  # dense BF16 FLOP/s
    hbm_bytes_per_s: float
    interconnect: str = "none"
    link_bytes_per_s: float = 0.0  # per direction, per GPU
    link_latency_s: float = 0.0  # per ring step
    rdma_bytes_per_s: float = 0.0  # per GPU, per direction: KV moved to another host (disaggregation)
    rdma_latency_s: float = 0.0  # fixed cost of one such transfer
    allreduce_launch_s: float = 0.0  # fixed cost of one collective call, whatever its size
    eager_layer_floor_s: float = 0.0  # least time per layer of an eager TP>1 iteration
    fsync_s: float = FSYNC_S  # one fdatasync of the host's disk (a replicated store's append)
    usable_memory_bytes: float = 0.0  # what the driver reports as total (0: memory_bytes)
    compute_efficiency: float = 0.36  # the H100 calibration (TTFT_CALIBRATION)
    memory_efficiency: float = 0.8
    iteration_overhead_s: float = 0.0005  # the serving stack's fixed CPU cost per scheduler step
    request_overhead_s: float = 0.0  # its cost per request before the scheduler sees it (HTTP, tokenising)
    output_lag_steps: float = 0.0  # scheduler steps a token takes to reach the client (API server's output processing)
    source: str = ""


@dataclass(frozen=True)
class Model:
    """A dense decoder-only transformer, as its config.json describes it."""

    name: str
    params: float  # parameter count
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int = 0
    attention_heads: int = 0
    dtype_bytes: int = 2  # BF16 weights
    active_params: float = 0.0  # parameters one token computes with (a mixture of experts: fewer); 0: all
    activation_extra_bytes: float = 0.0  # measured peak minus the estimate (activation_peak_gib)
    source: str = ""

    @property
    def weight_bytes(self) -> float:
        return self.params * self.dtype_bytes

    @property
    def flops_params(self) -> float:
        """Parameters each token's forward pass multiplies by: all of them, or for a mixture of
        experts the shared ones plus the experts it is routed to (`active_params`)."""
        return self.active_params or self.params

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V, every layer, every KV head, in BF16: 2 x layers x kv_heads x head_dim x 2."""
        return self.kv_bytes_per_token_per_gpu(1, "bf16")

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each GPU of a TP group holds.

        vLLM splits the KV heads over the group; with fewer KV heads than GPUs it replicates
        them, one per GPU (`max(1, num_kv_heads // tp)`, vllm/config ModelConfig.get_num_kv_heads).
        """
        return max(1, self.kv_heads // tp)

    def kv_bytes_per_token_per_gpu(self, tp: int, kv_dtype: str = "bf16") -> int:
        """What one cached token costs on each GPU of a TP group."""
        return 2 * self.layers * self.kv_heads_per_gpu(tp) * self.head_dim * KV_DTYPE_BYTES[kv_dtype]

    def activation_bytes_per_gpu(self, tokens: int, tp: int) -> float:
        """Peak activation memory of a forward pass over `tokens` tokens, on each GPU.

        An estimate of what vLLM's profiling run finds: about four hidden-sized buffers per
        token (residual, normed input, attention output, QKV) plus the MLP's gate and up
        projections (sharded over TP), in BF16: about 0.7 GB for Llama-3.1-8B at 8,192 tokens.
        vLLM measures far more (sampler buffers, CUDA graph pool, workspaces: 4.76 GiB for that
        model); a profile with `activation_peak_gib` adds the difference, whatever the batch.
        """
        width = 4 * self.hidden + 2 * self.intermediate / tp
        return tokens * width * self.dtype_bytes + self.activation_extra_bytes

    def estimated_activations(self, tokens: int) -> float:
        """The per-token estimate alone, on one GPU (what a measured peak is compared with)."""
        return tokens * (4 * self.hidden + 2 * self.intermediate) * self.dtype_bytes


# ---------------------------------------------------------------------------------------------
# Reading figures (the shipped data files and a scenario's own profiles share these keys)


def hardware_from_figures(name: str, f: Mapping[str, Any]) -> Hardware:
    """A Hardware from the keys of hardware.yaml (memory_gb, bf16_tflops, hbm_tb_s, ...)."""
    hw = Hardware(
        name=name,
        memory_bytes=float(f["memory_gb"]) * GB,
        peak_flops=float(f["bf16_tflops"]) * 1e12,
        hbm_bytes_per_s=float(f["hbm_tb_s"]) * 1e12,
        interconnect=str(f.get("interconnect") or "none"),
        link_bytes_per_s=float(f.get("interconnect_gb_s") or 0.0) * GB,
        link_latency_s=float(f.get("interconnect_latency_us") or 0.0) * 1e-6,
        rdma_bytes_per_s=float(f.get("rdma_gb_s") or 0.0) * GB,
        rdma_latency_s=float(f.get("rdma_latency_us") or 0.0) * 1e-6,
        allreduce_launch_s=float(f.get("allreduce_launch_us") or 0.0) * 1e-6,
        eager_layer_floor_s=float(f.get("eager_layer_floor_us") or 0.0) * 1e-6,
        fsync_s=float(f["fsync_us"]) * 1e-6 if f.get("fsync_us") is not None else FSYNC_S,
        usable_memory_bytes=float(f.get("usable_memory_gib") or 0.0) * GiB,
        source=str(f.get("source") or ""),
    )
    for key in ("compute_efficiency", "memory_efficiency"):
        if f.get(key) is not None:
            hw = replace(hw, **{key: float(f[key])})
    if f.get("iteration_overhead_us") is not None:
        hw = replace(hw, iteration_overhead_s=float(f["iteration_overhead_us"]) * 1e-6)
    if f.get("output_lag_steps") is not None:
        hw = replace(hw, output_lag_steps=float(f["output_lag_steps"]))
    if f.get("request_overhead_ms") is not None:
        hw = replace(hw, request_overhead_s=float(f["request_overhead_ms"]) * 1e-3)
    return hw


def model_from_figures(name: str, f: Mapping[str, Any]) -> Model:
    """A Model from the keys of models.yaml (params_b, layers, hidden, kv_heads, ...)."""
    heads = int(f["attention_heads"])
    head_dim = f.get("head_dim") or int(f["hidden"]) // heads
    model = Model(
        name=name,
        params=float(f["params_b"]) * 1e9,
        layers=int(f["layers"]),
        kv_heads=int(f["kv_heads"]),
        head_dim=int(head_dim),
        hidden=int(f["hidden"]),
        intermediate=int(f["intermediate"]),
        attention_heads=heads,
        active_params=float(f.get("active_params_b") or 0.0) * 1e9,
        source=str(f.get("source") or ""),
    )
    return with_measured_peak(model, f.get("activation_peak_gib"), f.get("activation_peak_tokens"))


def with_measured_peak(model: Model, peak_gib: Any, tokens: Any) -> Model:
    """The model with vLLM's measured profiling peak (GiB at `tokens` batched tokens, one GPU),
    kept as what the per-token estimate misses; unchanged without a measurement."""
    if not peak_gib:
        return model
    extra = float(peak_gib) * GiB - model.estimated_activations(int(tokens or 8192))
    return replace(model, activation_extra_bytes=max(0.0, extra))


def _read_data(filename: str) -> dict[str, dict]:
    text = resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")
    return yaml.safe_load(text) or {}


@functools.cache
def shipped_hardware() -> dict[str, Hardware]:
    """The hardware profiles shipped in hardware.yaml, by name."""
    return {name: hardware_from_figures(name, f) for name, f in _read_data("hardware.yaml").items()}


@functools.cache
def shipped_models() -> dict[str, Model]:
    """The model profiles shipped in models.yaml, by name."""
    return {name: model_from_figures(name, f) for name, f in _read_data("models.yaml").items()}


def _figures(spec: Any) -> Mapping[str, Any]:
    """A scenario profile (a dataclass) or a plain mapping, as a mapping of its figures."""
    return spec if isinstance(spec, Mapping) else vars(spec)


def catalog(
    hardware: Mapping[str, Any] | None = None, models: Mapping[str, Any] | None = None
) -> tuple[dict[str, Hardware], dict[str, Model]]:
    """Shipped profiles with a scenario's own added on top (same name: the scenario's wins)."""
    hw = dict(shipped_hardware())
    hw.update({name: hardware_from_figures(name, _figures(s)) for name, s in (hardware or {}).items()})
    md = dict(shipped_models())
    md.update({name: model_from_figures(name, _figures(s)) for name, s in (models or {}).items()})
    return hw, md


# Module-level views of the shipped profiles, for code that needs no scenario's own.
HARDWARE: Mapping[str, Hardware] = shipped_hardware()
MODELS: Mapping[str, Model] = shipped_models()


# ---------------------------------------------------------------------------------------------
# Memory fit


@dataclass(frozen=True)
class MemoryFit:
    """How one node's memory divides, per GPU (bytes), and the KV blocks that leaves."""

    budget: float  # gpu_memory_utilization x memory
    weights: float  # this GPU's shard of the weights
    activations: float  # the forward pass's activation peak
    kv_bytes_per_block: int  # one block of this GPU's KV shard
    tp: int

    @property
    def kv_room(self) -> float:
        return self.budget - self.weights - self.activations

    @property
    def blocks(self) -> int:
        """Blocks the node can hold: each block is spread over every GPU of the group."""
        return max(0, int(self.kv_room // self.kv_bytes_per_block))

    def kv_bytes(self, blocks: int) -> float:
        return blocks * self.kv_bytes_per_block


def memory_fit(
    hw: Hardware,
    model: Model,
    *,
    block_size: int,
    utilization: float,
    tp: int = 1,
    kv_dtype: str = "bf16",
    batched_tokens: int = 0,
) -> MemoryFit:
    """Divide each GPU's usable memory between weights/TP, activations and KV.

    Usable memory is what the driver reports (`usable_memory_gib`, else the data sheet's); the
    activations are the model's measured peak where its profile has one (Model.activation_bytes_per_gpu).

    With TP GPUs every block is sharded (or, with fewer KV heads than GPUs, replicated), so the
    node holds per-GPU room / per-GPU bytes of a block; when the heads split evenly that equals
    TP x per-GPU room / bytes of a whole block.
    """
    return MemoryFit(
        budget=(hw.usable_memory_bytes or hw.memory_bytes) * utilization,
        weights=model.weight_bytes / tp,
        activations=model.activation_bytes_per_gpu(batched_tokens, tp),
        kv_bytes_per_block=model.kv_bytes_per_token_per_gpu(tp, kv_dtype) * block_size,
        tp=tp,
    )


def derived_kv_blocks(hw: Hardware, model: Model, block_size: int, utilization: float, **kw) -> int:
    """Blocks left for KV after weights (and activations, when `batched_tokens` is given)."""
    return memory_fit(hw, model, block_size=block_size, utilization=utilization, **kw).blocks


def tp_problem(model: Model, tp: int) -> str | None:
    """Why `model` cannot be split over `tp` GPUs, or None (vLLM's own divisibility rules)."""
    if model.attention_heads and model.attention_heads % tp:
        return f"its {model.attention_heads} attention heads do not divide over {tp} GPUs"
    if tp > 1 and model.kv_heads % tp and tp % model.kv_heads:
        return f"its {model.kv_heads} KV heads neither divide over {tp} GPUs nor {tp} over them"
    return None


def gb(n: float) -> str:
    """Bytes as GB with one decimal, for messages."""
    return f"{n / GB:.1f}"


__all__ = [
    "CALIBRATION", "TP_CALIBRATION", "TTFT_CALIBRATION", "GB", "GiB", "HARDWARE", "Hardware", "KV_DTYPE_BYTES", "MODELS", "MemoryFit",
    "Model", "catalog", "derived_kv_blocks", "gb", "hardware_from_figures", "memory_fit",
    "model_from_figures", "shipped_hardware", "shipped_models", "tp_problem",
]
