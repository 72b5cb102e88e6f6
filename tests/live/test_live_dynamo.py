"""kvtui live against NVIDIA Dynamo 1.6.1's mocker, a real engine simulator that publishes KV
events in vLLM's wire format (`--zmq-kv-events-ports`, with a replay ROUTER on
`--zmq-replay-ports`), run with file discovery and a TCP request plane: no etcd, no NATS.

The test writes a tiny model directory (config.json and a word-level tokenizer.json: no model
hub), starts the mocker with a 16-block pool, subscribes before the mocker is up (so the
reconnect path runs), sends requests through Dynamo's own runtime client (dynamo_client.py, run
with the peer's Python), and checks kvtui's figures against a raw ZMQ subscriber beside it, and
every held block's key against kvtui's chained keys of the prompts sent. The raw subscriber
misses the first batch (ZMQ's slow joiner: the subscription reaches the mocker's PUB after it);
kvtui gets it from the mocker's replay socket, so the figures are compared batch by batch.

Observed form (1.6.1): an empty topic, tagged-map events without `medium` or `lora_id`, with
`group_idx`, and the data-parallel rank in the batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import msgpack
import numpy as np
import zmq

from kvtui.live.delivery import Received
from kvtui.live.engines import Engine
from kvtui.live.recording import Recorder, read_recording
from kvtui.live.wire import BlockRemoved, BlockStored, decode_message
from kvtui.live.session import LiveSession
from kvtui.live.subscriber import RECONNECT_MAX_MS
from kvtui.sim.workload.hashing import chain_keys

from differential import peers

from . import vllm_publishers as vp

HERE = os.path.dirname(__file__)
BLOCK = 16
REQUESTS = peers.cases(40)


def write_model(directory) -> None:
    """A Llama-shaped config and a word-level tokenizer over ids 0..999: what the mocker reads."""
    directory.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
              "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4,
              "num_hidden_layers": 2, "vocab_size": 1000, "max_position_embeddings": 2048,
              "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16"}
    special = [("<unk>", 0), ("<s>", 1), ("</s>", 2)]
    vocab = dict(special) | {f"w{i}": i for i in range(3, 1000)}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
                 "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
                 "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False,
                                   "rstrip": False, "normalized": False, "special": True} for c, i in special],
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "tokenizer_class": "PreTrainedTokenizerFast"}))


class RawCount:
    """A plain SUB socket beside kvtui's: block hashes per event type, read straight off msgpack."""

    def __init__(self, ctx: zmq.Context, endpoint: str):
        self.socket = ctx.socket(zmq.SUB)
        self.socket.connect(endpoint)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.per_seq: dict[int, tuple[int, int]] = {}  # seq -> (blocks stored, removed)
        self.topics: set[bytes] = set()

    def drain(self) -> None:
        while self.socket.poll(0):
            topic, seq, payload = self.socket.recv_multipart()
            self.topics.add(topic)
            totals = {"BlockStored": 0, "BlockRemoved": 0}
            for event in msgpack.unpackb(payload)[1]:
                totals[event["type"]] += len(event.get("block_hashes", ()))
            self.per_seq[int.from_bytes(seq, "big")] = (totals["BlockStored"], totals["BlockRemoved"])


def test_the_mocker_publishes_what_kvtui_counts(tmp_path):
    dynamo, extra = peers.require("dynamo"), peers.require("dynamo-mocker") / "site"
    write_model(tmp_path / "model")
    port, replay = vp.free_port_ranges(2, width=1)
    env = dict(os.environ, DYN_FILE_KV=str(tmp_path / "discovery"), PYTHONPATH=str(extra))
    python = str(dynamo / "bin" / "python")
    session = LiveSession([Engine("mocker", f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{replay}")],
                          Recorder(str(tmp_path / "rec")))
    ctx = zmq.Context()
    raw = RawCount(ctx, f"tcp://127.0.0.1:{port}")
    mocker = subprocess.Popen(
        [python, "-m", "dynamo.mocker", "--model-path", str(tmp_path / "model"), "--model-name", "tiny",
         "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq",
         "--zmq-kv-events-ports", str(port), "--zmq-replay-ports", str(replay),
         "--num-gpu-blocks-override", "16", "--block-size", str(BLOCK)],
        env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "mocker.log").open("w"))
    try:
        sent = _send(python, env, tmp_path, session, raw)
    finally:
        mocker.terminate()
        mocker.wait(timeout=30)
        session.close()
        raw.socket.close(linger=0)
        ctx.term()
    counts, state = session.state.counts["mocker"], session.state
    assert raw.topics == {b""}
    kvtui = _per_seq(read_recording(str(tmp_path / "rec")))
    assert sorted(kvtui) == list(range(max(raw.per_seq) + 1)), "every batch, the missed ones from replay"
    assert {s: kvtui[s] for s in raw.per_seq} == raw.per_seq
    assert (counts.stored, counts.removed) == tuple(map(sum, zip(*kvtui.values())))
    assert counts.removed > 0, "a 16-block pool evicts"
    assert (counts.malformed, counts.gaps, counts.orphans, counts.unknown_removed) == (0, 0, 0, 0)
    held = state.blocks["mocker"].by_medium["GPU"]
    assert len(held) == counts.stored - counts.removed <= 16
    expected = {k for tokens in sent for k in chain_keys(np.asarray(tokens), BLOCK)}
    assert set(held.values()) <= expected


def _send(python: str, env: dict, tmp_path, session: LiveSession, raw: RawCount) -> list[list[int]]:
    """Run the client while polling both subscribers; then a second of quiet to drain."""
    prompts_file, log = tmp_path / "prompts.json", tmp_path / "client.log"
    client = subprocess.Popen([python, os.path.join(HERE, "dynamo_client.py"), str(REQUESTS), str(prompts_file), "1"],
                              env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    deadline = time.monotonic() + 120
    while client.poll() is None and time.monotonic() < deadline:
        session.poll(0.05)
        raw.drain()
    if client.poll() is None:
        client.kill()
    assert client.wait() == 0, log.read_text()[-2000:]
    quiet = time.monotonic() + 1.0
    caught_up = time.monotonic() + RECONNECT_MAX_MS / 1000 + 5.0
    while time.monotonic() < quiet or (_behind(session, raw) and time.monotonic() < caught_up):
        session.poll(0.05)
        raw.drain()
    return json.loads(prompts_file.read_text())


def _behind(session: LiveSession, raw: RawCount) -> bool:
    """Whether kvtui has yet to see a batch the raw subscriber saw. kvtui's SUB retries with a
    backoff (up to RECONNECT_MAX_MS) while the raw one retries every 100 ms: when the mocker binds
    just after one of kvtui's attempts and the client is quick, every batch is out before kvtui
    connects, and kvtui gets them from replay once it does, which may be after a second of quiet."""
    return bool(raw.per_seq) and session.subscribers[0].expected <= max(raw.per_seq)


def _per_seq(deliveries) -> dict[int, tuple[int, int]]:
    """(blocks stored, removed) per batch seq, from kvtui's recording of the session."""
    out = {}
    for d in deliveries:
        if isinstance(d, Received):
            batch = decode_message(list(d.frames))
            out[batch.seq] = (sum(len(e.block_hashes) for e in batch.events if isinstance(e, BlockStored)),
                              sum(len(e.block_hashes) for e in batch.events if isinstance(e, BlockRemoved)))
    return out
