"""How long one scheduler iteration takes.

A node's scheduler runs iterations (vLLM's `EngineCore.step`): each one computes a batch of
prefill chunks and one decode token for every running request that is past its prefill. The
latency model turns that batch into seconds.

- `LinearModel` is the seed project's model: one request at a time, a cost per uncached prompt
  token and a cost per output token. With 1 ms each and 5 ms routing, a 1,200-token prompt with
  200 output tokens takes 5 + 1,200 + 200 = 1,405 ms.
- `RooflineModel` times an iteration as the slower of its compute and its memory traffic:
  prefill is compute-bound (2 FLOPs per parameter per token, plus attention), decode is
  memory-bound (all weights are read every iteration, plus every running request's KV). This
  is the first-order model behind LLM-Viewer / the "LLM inference roofline" analyses and the
  analytical mode of Vidur-like simulators; efficiencies scale the data-sheet peaks down to
  what kernels achieve.

Tensor parallelism (Megatron-LM's split, as vLLM runs it): a node of TP GPUs is one server
whose every GPU holds 1/TP of the weights and of the KV heads, so compute and memory bandwidth
scale with TP; in exchange each layer pays two all-reduces of the activations (after attention
and after the MLP), timed as a ring all-reduce: 2(TP-1)/TP x bytes / link bandwidth plus one
link latency per step, 2(TP-1) steps, plus a fixed launch cost per collective call. vLLM does
not overlap these with compute, so they add.

The floor of an eager tensor-parallel iteration. vLLM replays CUDA graphs only for batches up
to its largest captured size (V1: `min(2 x max_num_seqs, 512)` tokens, CompilationConfig's
cudagraph_capture_sizes; vLLM 0.6: decode-only batches); a bigger batch runs eagerly, the host
launching every layer's kernels and its two collectives on each TP worker. Split over 2-8 GPUs a
layer's GPU work is shorter than that, so the host sets the pace: LambdaLabsML/vllm-benchmark's
H100 runs (10 prompts, 1,369 tokens in one batch) take 1.5-1.75 ms per layer whatever the model
and TP degree (8B TP=2 53.5 ms, TP=4 47.9, TP=8 55.9; 70B TP=8 122.3 ms over 80 layers) where
the roofline gives a sixth to a half of that. `eager_layer_floor` (hardware profile) is that
least time per layer, for batches over GRAPH_MAX_TOKENS with TP > 1 (at TP=1 the one process
launches ahead of the GPU, and no TP=1 run shows a floor). Sources: kvtui.profiles.TP_CALIBRATION.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.profiles import Hardware, Model

# The largest batch (tokens) vLLM V1 replays as a CUDA graph with its default max_num_seqs 256:
# min(2 x 256, 512). Bigger batches run eagerly and meet the eager floor (module docstring).
GRAPH_MAX_TOKENS = 512

# How far a decode run's memory time must exceed its compute time at both ends of the run for
# the memory time alone to be taken (RooflineModel.decode_run): each time is a few rounded
# float operations, off by at most a few units in the 53rd bit (~1e-15); this is far above.
_MEMORY_BOUND_ROOM = 1.0 + 1e-9


@dataclass(frozen=True)
class Batch:
    """One iteration's work.

    prefill_tokens: new prompt tokens computed this iteration (all chunks together);
    prefill_context: sum over prefill chunks of (tokens in chunk x tokens attended, roughly
        the chunk's end position) — the attention work;
    prefill_kv_read: cached tokens the prefill chunks attend to (their prefix's KV);
    decode_seqs: requests producing one token by decode;
    decode_context: total tokens of KV those decodes read;
    tokens_out: requests that produce an output token this iteration (decodes + finished prefills).
    """

    prefill_tokens: int = 0
    prefill_context: int = 0
    prefill_kv_read: int = 0
    decode_seqs: int = 0
    decode_context: int = 0
    tokens_out: int = 0


def prefill_seconds(model, tokens: int, context: int) -> float:
    """One iteration prefilling `tokens` new tokens after `context` cached ones, alone in its batch
    (how long a request's uncached part takes, and what a CPU-tier load saves)."""
    batch = Batch(
        prefill_tokens=tokens, prefill_context=tokens * (context + (tokens + 1) // 2), prefill_kv_read=context, tokens_out=1
    )
    return model.iteration(batch)


class LinearModel:
    """The seed's serial model: cost per uncached prompt token + cost per output token."""

    serial = True
    recompute_full_hit = False  # the seed counts an exact hit as a fully cached prompt
    output_lag_steps = 0.0  # tokens reach the client as they are computed

    def __init__(self, prefill_s_per_token: float, decode_s_per_token: float):
        self.prefill = prefill_s_per_token
        self.decode = decode_s_per_token

    def iteration(self, batch: Batch) -> float:
        return batch.prefill_tokens * self.prefill + (self.decode if batch.tokens_out else 0.0)

    def decode_run(self, k: int, seqs: int, context: int) -> list[float]:
        """Durations of k decode-only iterations (context grows by `seqs` tokens each)."""
        return [self.decode] * k


class RooflineModel:
    """max(compute time, memory time) + a fixed per-iteration overhead."""

    serial = False
    recompute_full_hit = True  # vLLM recomputes the last prompt token to get its logits

    def __init__(
        self,
        hardware: Hardware,
        model: Model,
        compute_efficiency: float | None = None,
        memory_efficiency: float | None = None,
        overhead_s: float = 0.0005,
        tensor_parallel: int = 1,
        kv_dtype: str = "bf16",
        output_lag_steps: float = 0.0,
    ):
        """Efficiencies default to the hardware profile's (calibrated for h100-80gb).

        All byte figures are per GPU: each reads its shard in parallel with the others, so the
        memory time of the group is one GPU's shard over one GPU's bandwidth.
        """
        tp = tensor_parallel
        ce = hardware.compute_efficiency if compute_efficiency is None else compute_efficiency
        me = hardware.memory_efficiency if memory_efficiency is None else memory_efficiency
        self.flops = hardware.peak_flops * ce * tp  # the whole group's achieved FLOP/s
        self.bandwidth = hardware.hbm_bytes_per_s * me  # per GPU
        self.weight_bytes = model.weight_bytes / tp  # per GPU
        self.kv_bytes = model.kv_bytes_per_token_per_gpu(tp, kv_dtype)  # per GPU, per token
        self.flops_per_token = 2.0 * model.flops_params
        # QK^T and AV: 2 matmuls x 2 FLOPs x hidden per (query token, key token) per layer.
        self.attn_flops = 4.0 * model.layers * model.hidden
        self.overhead = overhead_s
        # The API server delivers a step's tokens while the engine runs the next ones (vLLM V1's
        # output processing in its own process): each token reaches the client this many times
        # the duration of the iteration that computed it late (the node adds it to what the
        # client measures, TTFT and E2E; TPOT moves only by the difference of the two lags).
        self.output_lag_steps = output_lag_steps
        self.tp = tp
        self._allreduces = 2 * model.layers  # per forward pass: attention output and MLP output
        self._activation_bytes = model.hidden * model.dtype_bytes  # one token's hidden state
        self._link_bandwidth = hardware.link_bytes_per_s
        self._link_latency = hardware.link_latency_s
        self._launch = hardware.allreduce_launch_s
        self.eager_floor = model.layers * hardware.eager_layer_floor_s if tp > 1 else 0.0
        # every term of both times non-negative (and no NaN): their rounding errors stay relative
        terms = (self.flops_per_token, self.attn_flops, self.weight_bytes, self.kv_bytes)
        self._plain = all(x >= 0 for x in terms) and self.flops > 0 and self.bandwidth > 0

    def allreduce_time(self, tokens: int) -> float:
        """Seconds of all-reduce in one forward pass over `tokens` tokens (0 without TP)."""
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        steps = 2 * (self.tp - 1)
        size = tokens * self._activation_bytes
        one = steps / self.tp * size / self._link_bandwidth + steps * self._link_latency + self._launch
        return self._allreduces * one

    def iteration(self, batch: Batch) -> float:
        tokens = batch.prefill_tokens + batch.decode_seqs
        if tokens == 0:
            return 0.0
        flops = self.flops_per_token * tokens + self.attn_flops * (
            batch.prefill_context + batch.decode_context
        )
        moved = (
            self.weight_bytes
            + self.kv_bytes * (batch.decode_context + batch.prefill_kv_read)
            + self.kv_bytes * tokens  # KV written
        )
        return max(flops / self.flops, moved / self.bandwidth, self.floor(tokens)) + self.allreduce_time(tokens) + self.overhead

    def floor(self, tokens: int) -> float:
        """The least time of an iteration of `tokens` tokens: the eager floor past the graphs."""
        return self.eager_floor if tokens > GRAPH_MAX_TOKENS else 0.0

    def decode_run(self, k: int, seqs: int, context: int) -> list[float]:
        """Durations of k decode-only iterations of `seqs` requests reading `context` KV tokens.

        Each iteration every request appends one token, so the KV read grows by `seqs`. Decode
        is memory-bound: when the whole run is (`memory_bound`), each duration is its memory
        time plus the fixed costs, computed by the same float operations as `decode_loop`'s (the
        same bits) without the compute time and the max beside them (this runs for every decode
        segment of every node).
        """
        fixed = self.allreduce_time(seqs) + self.overhead
        if k > 0 and seqs > 0 and context >= 0 and self.memory_bound(seqs, context, context + seqs * (k - 1)):
            wb, kvb, bw = self.weight_bytes, self.kv_bytes, self.bandwidth
            return [(wb + kvb * c) / bw + fixed for c in range(context + seqs, context + seqs * (k + 1), seqs)]
        return self.decode_loop(k, seqs, context, fixed)

    def memory_bound(self, seqs: int, first: int, last: int) -> bool:
        """Whether every iteration of a decode run reading `first` .. `last` KV tokens is timed by
        its memory traffic alone, as computed (rounded) by `decode_loop`.

        Checked at both ends: memory time above compute time by _MEMORY_BOUND_ROOM, far more than
        rounding moves either, and not under the floor. Both exact times are affine in the
        context, so an order with that room at the ends holds at every context between, and
        rounding cannot turn it; the rounded memory time never falls along the run (all terms
        non-negative: `_plain`), so it stays at or above the floor.
        """
        if not self._plain:
            return False
        f_tok = self.flops_per_token * seqs
        floor = self.floor(seqs)
        for ctx in (first, last):
            compute = (f_tok + self.attn_flops * ctx) / self.flops
            memory = (self.weight_bytes + self.kv_bytes * (ctx + seqs)) / self.bandwidth
            if not (compute * _MEMORY_BOUND_ROOM < memory and floor <= memory):
                return False
        return True

    def decode_loop(self, k: int, seqs: int, context: int, fixed: float) -> list[float]:
        """`decode_run` iteration by iteration: the slower of compute, memory and the floor."""
        f_tok = self.flops_per_token * seqs
        floor = self.floor(seqs)
        out = []
        for j in range(k):
            ctx = context + seqs * j
            compute = (f_tok + self.attn_flops * ctx) / self.flops
            memory = (self.weight_bytes + self.kv_bytes * (ctx + seqs)) / self.bandwidth
            out.append(max(compute, memory, floor) + fixed)
        return out
