"""Run by the `sglang-events` peer's python (.ci/peers/sglang-events.sh) with the folder of one
SGLang version as its argument: that version's own KV-event classes encode the batches the test describes, as its publisher does
(python/sglang/srt/disaggregation/kv_events.py: `KVEventBatch`, `BlockStored`, `BlockRemoved`,
`AllBlocksCleared`, `msgspec.msgpack.Encoder`). The module is loaded alone from the installed
wheel: the package's `__init__` pulls in torch, so the two modules it imports for names it does
not call while encoding (`sglang.srt.runtime_context.get_parallel`,
`sglang.srt.utils.network.NetworkAddress`) are stubs that raise if called.

stdin: JSON `[{"ts": float, "rank": int | null, "events": [{"type": NAME, field: value, ...}]}]`
stdout: JSON `{"media": [the media it names], "payloads": [hex of each batch]}`
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path


def _unused(name: str):
    def call(*args, **kwargs):
        raise NotImplementedError(f"sglang_events_side stub {name} was called")
    return call


def load() -> types.ModuleType:
    for name, attrs in {"sglang.srt.runtime_context": {"get_parallel": _unused("get_parallel")},
                        "sglang.srt.utils.network": {"NetworkAddress": _unused("NetworkAddress")}}.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
    path = Path(sys.argv[1]) / "sglang/srt/disaggregation/kv_events.py"
    spec = importlib.util.spec_from_file_location("sglang_kv_events", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sglang_kv_events"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    import msgspec

    kv = load()
    encoder = msgspec.msgpack.Encoder()
    payloads = []
    for batch in json.load(sys.stdin):
        events = [getattr(kv, e.pop("type"))(**e) for e in batch["events"]]
        payloads.append(encoder.encode(kv.KVEventBatch(ts=batch["ts"], events=events, attn_dp_rank=batch["rank"])).hex())
    media = [m.value for m in kv.StorageMedium] if hasattr(kv, "StorageMedium") else [kv.MEDIUM_GPU, kv.MEDIUM_CPU]
    json.dump({"media": media, "payloads": payloads}, sys.stdout)


if __name__ == "__main__":
    main()
