"""LoRA adapters in live mode's keys (kvtui/live/lora.py): vLLM 0.33.0 hashes a LoRA request's
blocks with the adapter, so the same prompt under an adapter and under the base model shares no
block. The events here are vLLM's own classes, published by its own ZmqEventPublisher; the
route-mode side asks the proxy which adapter a request's `model` names and routes with it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from kvtui.live.engines import Engine
from kvtui.live.lora import adapter_of, adapter_root
from kvtui.live.proxy import RouteProxy
from kvtui.live.routing import LiveRouter
from kvtui.live.session import LiveSession
from kvtui.sim.workload.hashing import chain_keys

from . import vllm_publishers as vp
from .live_support import pump, session_for, settle

BS = 16  # vLLM's default, which route mode assumes before an engine's metrics say otherwise
TOKENS = list(range(100, 100 + 4 * BS))  # four blocks


@pytest.fixture(scope="module")
def kv():
    return vp.load_new().kv_events


def stored(kv, hashes: list[int], lora_name: str | None, parent: int | None = None, tokens=TOKENS):
    return kv.BlockStored(block_hashes=hashes, parent_block_hash=parent, token_ids=list(tokens), block_size=BS,
                          lora_id=None if lora_name is None else 1, medium="GPU", lora_name=lora_name)


def live_state(kv, *batches):
    pub = vp.Publisher(kv)
    session = session_for(pub)
    try:
        settle(session)
        for events in batches:
            pub.publish(events)
        pump(session, pub)
    finally:
        session.close()
        pub.close()
    return session.state


def test_the_same_prompt_under_an_adapter_and_the_base_model_shares_no_key(kv):
    state = live_state(kv, [stored(kv, [1, 2, 3, 4], None)], [stored(kv, [11, 12, 13, 14], "sql-lora")])
    base = state.blocks["e0"].by_medium["GPU"]
    assert {base[h] for h in (1, 2, 3, 4)}.isdisjoint(base[h] for h in (11, 12, 13, 14))
    assert [base[h] for h in (1, 2, 3, 4)] == chain_keys(np.asarray(TOKENS), BS, None)
    assert [base[h] for h in (11, 12, 13, 14)] == chain_keys(np.asarray(TOKENS), BS, adapter_root("sql-lora"))
    assert state.adapters == {"sql-lora"}


def test_an_adapter_child_block_chains_from_its_adapter_parent(kv):
    state = live_state(kv, [stored(kv, [11, 12], "sql-lora", tokens=TOKENS[:2 * BS])],
                       [stored(kv, [13, 14], "sql-lora", parent=12, tokens=TOKENS[2 * BS:])])
    held = state.blocks["e0"].by_medium["GPU"]
    assert [held[h] for h in (11, 12, 13, 14)] == chain_keys(np.asarray(TOKENS), BS, adapter_root("sql-lora"))
    assert state.counts["e0"].orphans == 0


def test_the_live_index_remembers_first_blocks_only_and_still_matches(kv):
    """A live session runs for hours: the index's set of first blocks must not keep every key
    an engine ever stored (live events have no position, only a parent or none)."""
    state = live_state(kv, [stored(kv, [1, 2], None, tokens=TOKENS[:2 * BS])],
                       [stored(kv, [3, 4], None, parent=2, tokens=TOKENS[2 * BS:])])
    keys = chain_keys(np.asarray(TOKENS), BS, None)
    assert state.kv_index._firsts == {keys[0]}
    assert state.kv_index.match(keys)["e0"].consecutive == 4


def test_an_old_engine_names_its_adapter_by_id_only():
    assert adapter_of(None, 3) == "lora-id:3" and adapter_of("a", 3) == "a" and adapter_of(None, None) is None
    assert adapter_root(None) is None
    assert adapter_root("a") == adapter_root("a") != adapter_root("b")


class Models:
    """An engine's /v1/models as vLLM answers it: the base model's card, and a LoRA module's
    with a `parent`."""

    def __init__(self, adapters: list[str]):
        cards = [{"id": "base", "object": "model", "parent": None}]
        cards += [{"id": a, "object": "model", "parent": "base"} for a in adapters]
        body, self.asked = json.dumps({"object": "list", "data": cards}).encode(), 0
        models = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                models.asked += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.api = f"http://127.0.0.1:{self.httpd.server_address[1]}"


def test_route_mode_keys_a_request_by_the_adapter_its_model_names(kv):
    """Engine a holds the prompt under the base model, b under `sql-lora`: a request for
    `sql-lora` is promised b's blocks, a base-model request a's; an adapter only /v1/models
    lists is known too, and a model name is looked up there once."""
    models = Models(["listed-lora"])
    pubs = {"a": vp.Publisher(kv), "b": vp.Publisher(kv)}
    engines = [Engine(n, p.endpoint, p.replay_endpoint, api=models.api) for n, p in pubs.items()]
    session = LiveSession(engines, None)
    proxy = RouteProxy("127.0.0.1", vp.free_port(), LiveRouter("cache_aware", engines), session)
    try:
        settle()
        pubs["a"].publish([stored(kv, [1, 2, 3, 4], None)])
        pubs["b"].publish([stored(kv, [11, 12, 13, 14], "sql-lora")])
        deadline = time.monotonic() + 10
        while any(s.expected < 1 for s in session.subscribers) and time.monotonic() < deadline:
            session.poll(0.05)
        lora, base = proxy.decide({"model": "sql-lora"}, TOKENS), proxy.decide({"model": "base"}, TOKENS)
        assert (lora.decision.node, lora.promised("b"), lora.promised("a")) == ("b", 4, 0)
        assert (base.decision.node, base.promised("a"), base.promised("b")) == ("a", 4, 0)
        assert proxy.adapter("listed-lora") == "listed-lora" and proxy.adapter("base") is None
        proxy.adapter("base")
        assert models.asked == 2  # once for "base", once for "listed-lora"; sql-lora came from the events
    finally:
        proxy.close()
        session.close()
        for pub in pubs.values():
            pub.close()
        models.httpd.shutdown()
