"""Loads vLLM 0.33.0's real block pool from the peer install (`.ci/peers/vllm.sh`).

What is real, from the vLLM wheel: vllm/v1/core/block_pool.py (`BlockPool`,
`BlockHashToBlockMap`), vllm/v1/core/kv_cache_utils.py (`KVCacheBlock`,
`FreeKVCacheBlockQueue`, `hash_block_tokens`, `init_none_hash`), vllm/distributed/kv_events.py
(`BlockStored`, `BlockRemoved`, `KVEventBatch`, with the real msgspec), vllm/utils/hashing.py
(`sha256`, vLLM's default prefix-caching hash, with the real cbor2), vllm/utils/math_utils.py and
vllm/v1/kv_cache_spec_registry.py.

What is a stub, and why it may be: the modules those import only for names they never call on
the path the differential test drives (no torch, no multimodal inputs, no LoRA, one KV cache
group, no metrics collector, no ZMQ publisher): the config classes, the request class (the test
passes its own object with the attributes `BlockPool` reads), the KV cache specs (they need
torch), the metrics collector, the network helpers, and `vllm.envs`, whose one read flag keeps
vLLM's default (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`: events carry 64-bit integer hashes).
The `vllm` packages are namespace shells over the extracted files, so the wheel's
`vllm/__init__.py` (which pulls in torch) never runs.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from dataclasses import dataclass
from pathlib import Path


def _module(name: str, path: Path | None = None, **names) -> types.ModuleType:
    """A stub module (or, with `path`, a package shell over the extracted sources)."""
    mod = types.ModuleType(name)
    if path is not None:
        mod.__path__ = [str(path)]
    mod.__dict__.update(names)
    sys.modules[name] = mod
    return mod


def _placeholder(name: str) -> type:
    return type(name, (), {})


def _unused(name: str):
    def call(*_args, **_kw):
        raise NotImplementedError(f"vllm_peer stub {name} was called: the test drove a path it does not model")

    return call


def load(install: Path) -> types.SimpleNamespace:
    """Import the real modules from `install` (the peer's directory) and return them."""
    src, site = install / "src", install / "site"
    if str(site) not in sys.path:
        sys.path.append(str(site))  # after the project's own packages: it only fills in what they lack
    for pkg in ("vllm", "vllm.v1", "vllm.v1.core", "vllm.distributed", "vllm.utils", "vllm.multimodal"):
        _module(pkg, src.joinpath(*pkg.split(".")))
    _module("vllm.config", src / "vllm" / "config", VllmConfig=_placeholder("VllmConfig"))
    _module("vllm.config.kv_events", KVEventsConfig=_placeholder("KVEventsConfig"))
    _module("vllm.envs", VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=True)
    _module("vllm.logger", init_logger=logging.getLogger)
    _module("vllm.multimodal.utils", get_mm_features_in_window=_unused("get_mm_features_in_window"))
    _module("vllm.v1.request", Request=_placeholder("Request"))
    _module("vllm.v1.utils", tensor_data=_unused("tensor_data"))
    _module("vllm.v1.core.kv_cache_metrics", KVCacheMetricsCollector=_placeholder("KVCacheMetricsCollector"))
    specs = ("KVCacheConfig", "KVCacheGroupSpec", "KVCacheSpec", "MambaSpec", "UniformTypeKVCacheSpecs")
    _module("vllm.v1.kv_cache_interface", iter_layer_specs=_unused("iter_layer_specs"), **{n: _placeholder(n) for n in specs})
    network = ("get_ip", "get_tcp_uri", "is_valid_ipv6_address", "split_zmq_path")
    _module("vllm.utils.network_utils", **{n: _unused(n) for n in network})
    sys.modules["vllm"].envs = sys.modules["vllm.envs"]
    utils = importlib.import_module("vllm.v1.core.kv_cache_utils")
    hashing = importlib.import_module("vllm.utils.hashing")
    utils.init_none_hash(hashing.sha256)
    return types.SimpleNamespace(
        block_pool=importlib.import_module("vllm.v1.core.block_pool"),
        kv_cache_utils=utils,
        kv_events=importlib.import_module("vllm.distributed.kv_events"),
        hashing=hashing,
    )


@dataclass
class RequestView:
    """The attributes `BlockPool.cache_full_blocks` reads from a request (no LoRA, no
    multimodal input, no salt: what the stream sends)."""

    block_hashes: list[bytes]
    all_token_ids: list[int]
    lora_request: None = None
    session_id: None = None
    mm_features: tuple = ()
    cache_salt: None = None
    prompt_embeds: None = None
