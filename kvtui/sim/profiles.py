"""Hardware and model profiles: the numbers the roofline latency model and KV sizing use.

Every figure names its source. Peak FLOP/s are dense (no 2:4 sparsity) BF16 tensor-core
numbers from the vendor data sheets; bandwidth is HBM/GDDR peak.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9
GiB = 1024**3


@dataclass(frozen=True)
class Hardware:
    name: str
    memory_bytes: float
    peak_flops: float  # dense BF16 FLOP/s
    hbm_bytes_per_s: float


@dataclass(frozen=True)
class Model:
    name: str
    params: float  # parameter count
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    dtype_bytes: int = 2  # BF16 weights and KV cache

    @property
    def weight_bytes(self) -> float:
        return self.params * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V, every layer, every KV head: 2 x layers x kv_heads x head_dim x dtype bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes


HARDWARE: dict[str, Hardware] = {
    # NVIDIA A100 80GB SXM data sheet: 312 TFLOPS BF16 dense, 2,039 GB/s HBM2e, 80 GB.
    "a100-80gb": Hardware("a100-80gb", 80 * GB, 312e12, 2039 * GB),
    # NVIDIA H100 SXM5 data sheet: 989 TFLOPS BF16 dense (1,979 with sparsity), 3.35 TB/s HBM3, 80 GB.
    "h100-80gb": Hardware("h100-80gb", 80 * GB, 989e12, 3350 * GB),
    # NVIDIA H200 SXM data sheet: same compute as H100 SXM, 141 GB HBM3e at 4.8 TB/s.
    "h200": Hardware("h200", 141 * GB, 989e12, 4800 * GB),
    # NVIDIA L4 data sheet: 121 TFLOPS BF16 dense (242 with sparsity), 24 GB GDDR6 at 300 GB/s.
    "l4": Hardware("l4", 24 * GB, 121e12, 300 * GB),
}

MODELS: dict[str, Model] = {
    # meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads
    # (head_dim 128); 8.03 B parameters. KV: 2 x 32 x 8 x 128 x 2 B = 128 KiB per token.
    "llama-3.1-8b": Model("llama-3.1-8b", 8.03e9, 32, 8, 128, 4096),
    # meta-llama/Llama-3.1-70B config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads
    # (head_dim 128); 70.6 B parameters. KV: 320 KiB per token. Needs >1 GPU in BF16: the
    # profile is used with TP treated as one node of the chosen hardware (see README).
    "llama-3.1-70b": Model("llama-3.1-70b", 70.6e9, 80, 8, 128, 8192),
    # Qwen/Qwen2.5-7B config.json: 28 layers, hidden 3584, 28 heads, 4 KV heads (head_dim 128);
    # 7.62 B parameters. KV: 2 x 28 x 4 x 128 x 2 B = 56 KiB per token.
    "qwen2.5-7b": Model("qwen2.5-7b", 7.62e9, 28, 4, 128, 3584),
}


def derived_kv_blocks(hw: Hardware, model: Model, block_size: int, utilization: float) -> int:
    """Blocks left for KV after weights, as vLLM sizes its cache.

    vLLM profiles a forward pass and gives the KV cache what remains of
    `gpu_memory_utilization x total memory` after weights and activations; kvtui leaves out
    activations (a few percent) and divides the rest by the bytes of one block.
    """
    budget = hw.memory_bytes * utilization - model.weight_bytes
    if budget <= 0:
        return 0
    return int(budget // (model.kv_bytes_per_token * block_size))
