"""Route mode end to end on loopback: two engines whose cores are vLLM 0.33.0's real BlockPool
and ZmqEventPublisher (tests/live/vllm_publishers.py), each behind a thin OpenAI-style HTTP
front written here (/tokenize, /v1/completions streaming and not, /metrics in vLLM's names),
and kvtui's proxy routing requests of a shared-prefix workload with its cache_aware policy over
the index built from the engines' real KV events.

Checked: every answer reaches the client whole (streamed ones to `[DONE]`); the blocks the
forensics count as hit are the blocks the real pools served from cache; for every request the
causes add up to its missed blocks; cache_aware's choices follow the index (a request whose
prefix an engine holds goes there, so hits happen); the recording replays to the same lines.
The real-vLLM-on-the-CPU run of the issue is by hand (docs/live.md)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from kvtui.cli import main
from kvtui.live.delivery import Served, ingest
from kvtui.live.engines import Engine
from kvtui.live.proxy import RouteProxy
from kvtui.live.recording import read_recording
from kvtui.live.routing import LiveRouter
from kvtui.live.session import LiveSession, summary_lines
from kvtui.live.state import LiveState

from . import vllm_publishers as vp
from .live_support import prompts
from .route_support import post, routed_cluster, wait_until

def test_route_mode_serves_routes_and_accounts_for_every_missed_block(tmp_path):
    work = prompts(11, 60)
    with routed_cluster("cache_aware", str(tmp_path / "rec")) as c:
        wait_until(lambda: len(c.session.state.figures) == 2)
        for k, tokens in enumerate(work):
            answer = post(c.url, {"model": "m", "prompt": " ".join(map(str, tokens)), "stream": k % 3 == 0, "max_tokens": 2})
            assert answer.endswith(b"data: [DONE]\n\n") if k % 3 == 0 else json.loads(answer)["choices"]
            time.sleep(0.02)  # the engine's events reach the index before the next decision
        wait_until(lambda: len(c.session.state.served) == len(work))
    session, fronts = c.session, c.fronts
    served = list(session.state.served)
    assert sum(s.forensics.hit for s in served) == sum(sum(f.hits) for f in fronts) > 0
    for s in served:
        f = s.forensics
        assert sum(n for _, n in f.causes) == f.missed == f.prompt_blocks - f.hit, s
        assert {c[0] for c in s.candidates} == {"vllm-0", "vllm-1"}
    assert sum(1 for s in served if s.forensics.promised > 0) > len(work) // 4  # affinity over the live index
    replayed = LiveState()
    for d in read_recording(str(tmp_path / "rec")):
        ingest(replayed, d)
    assert summary_lines(replayed) == summary_lines(session.state)
    assert any(line.startswith("routed 60 requests") for line in summary_lines(replayed))
    assert all(isinstance(s, Served) for s in replayed.served)
    assert all(s.prompt_tokens == len(t) and s.output_tokens == 2 for s, t in zip(replayed.served, work))
    # the cluster watched is a report `kvtui calibrate` fits (its timings, lengths and hit rate)
    assert main(["calibrate", str(tmp_path / "rec"), "--json", str(tmp_path / "acc.json")]) == 0
    assert json.loads((tmp_path / "acc.json").read_text())["format"] == "kvtui-recording"


@pytest.mark.parametrize("body, status", [(b"{not json", 400), (b'{"model": "m"}', 400),
                                          (b'{"model": "m", "prompt": "1 2"}', 502)])
def test_a_bad_request_is_400_and_an_engine_that_cannot_tokenize_is_502(body, status):
    engine = Engine("e0", f"tcp://127.0.0.1:{vp.free_port()}", api=f"http://127.0.0.1:{vp.free_port()}")
    session = LiveSession([engine])
    proxy = RouteProxy("127.0.0.1", vp.free_port(), LiveRouter("least_loaded", [engine]), session)
    request = urllib.request.Request(f"http://127.0.0.1:{proxy.address[1]}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == status
        assert json.loads(refused.value.read())["error"]["type"] == "kvtui_route"
    finally:
        proxy.close()
        session.close()
