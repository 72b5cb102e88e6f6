"""Live mode, recordings and the route proxy against hostile peers (tests/live/hostile.py), one
test (or a few) per failure class of issue 32, most severe first. Each failed on the code
before the fix: a hang (here: a thread still running at its bound), a crash, or a loss that
was not told. Everything runs on 127.0.0.1 and every peer stops by itself."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import zmq

from kvtui.cli import main as cli_main
from kvtui.live.delivery import Gap, Received, Watching, ingest
from kvtui.live.engines import Engine
from kvtui.live.metrics import engine_figures
from kvtui.live.proxy import RouteProxy
from kvtui.live.recording import Recorder
from kvtui.live.routing import LiveRouter
from kvtui.live.scraper import scrape
from kvtui.live.session import LiveSession, summary_lines
from kvtui.live.state import LiveState
from kvtui.live.subscriber import Subscriber

from . import hostile as h

BOUND_S = 20.0  # far past what any of these takes when it works: reaching it is a hang

STORE = h.stored([11, 12], list(range(8)))


def _bounded(work) -> bool:
    """Run `work` in a daemon thread; True when it finished within BOUND_S."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    return not thread.is_alive()


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.term()


def _subscriber(ctx, replay=None, timeout=0.3):
    out: list = []
    sub = Subscriber(ctx, "e", f"tcp://127.0.0.1:{h.free_port()}", replay, out.append, replay_timeout=timeout)
    return sub, out


def _state(deliveries) -> LiveState:
    state = LiveState()
    for d in deliveries:
        ingest(state, d)
    return state


# ------------------------------------------------------------------ 1. a far-ahead seq
def test_a_far_ahead_seq_is_one_counted_gap_not_a_walk(ctx):
    sub, out = _subscriber(ctx)
    try:
        sub.on_message(h.message(0, [STORE]))
        assert _bounded(lambda: sub.on_message(h.message(2**62, [])))
    finally:
        sub.close()
    counts = _state(out).counts["e"]
    assert (counts.batches, counts.gaps) == (2, 2**62 - 1)
    assert sub.expected == 2**62 + 1


def test_a_replay_socket_answering_a_far_seq_does_not_hang_the_start(ctx):
    far = 2**62
    replay = h.ReplaySocket(lambda start: [(0, [b"", b"kv", h.seq_bytes(far), h.payload([STORE])]),
                                           (0, [b"", b"", h.seq_bytes(-1), b""])])
    sub, out = _subscriber(ctx, replay.endpoint)
    try:
        sub.catch_up()
        assert h.replayed(sub, BOUND_S)
    finally:
        sub.close()
        replay.close()
    counts = _state(out).counts["e"]
    assert (counts.batches, counts.replayed, counts.gaps) == (1, 1, far)


# ------------------------------------------------------------------ 2. legal-looking values
@pytest.mark.parametrize("event, kind", [
    (h.stored([1], [2**63, 1, 2, 3]), "token id"),
    (h.stored([1], [-1, 1, 2, 3]), "token id"),
    (h.stored([1], [1, 2, 3, 4], block_size=True), "block size"),
    (h.stored([1], [1, 2, 3, 4], block_size=2**40), "block size"),
    (h.stored([True], [1, 2, 3, 4]), "hash"),
    ({"type": "BlockRemoved", "block_hashes": [1], "medium": ["GPU"]}, "medium"),
    (h.stored([1], [1, 2, 3, 4], extra_keys=[None, None]), "extra keys"),
    (h.stored([1], [1, 2, 3, 4], extra_keys=[[{"a": 1}]]), "extra keys"),
    (h.stored([1], [1, 2, 3, 4], extra_keys=[[[1.5]]]), "extra keys"),
    (h.stored([1], [1, 2, 3, 4], extra_keys=[["x" * 5000]]), "extra keys"),
    (h.stored([1], [1, 2, 3, 4], cache_salt=7), "extra keys"),
])
def test_a_value_out_of_range_is_counted_by_kind_and_never_raised(event, kind):
    state = _state([Received("e", 0.0, tuple(h.message(0, [event]))), Received("e", 0.0, tuple(h.message(1, [STORE])))])
    counts = state.counts["e"]
    assert (counts.malformed, dict(counts.malformed_by_kind), counts.stored) == (1, {kind: 1}, 2)
    assert f"malformed 1 ({kind} 1)" in counts.line("e")


def test_a_recording_of_bad_values_replays_and_verifies_alike(tmp_path, capsys):
    rec = str(tmp_path / "rec")
    recorder = Recorder(rec)
    for d in [Watching("e", 0.0), Received("e", 1.0, tuple(h.message(0, [h.stored([1], [2**63] * 4)]))),
              Received("e", 2.0, tuple(h.message(1, [h.stored([2], [1, 2, 3, 4], block_size=True)]))),
              Received("e", 3.0, tuple(h.message(2, [STORE])))]:
        recorder.add(d)
    recorder.close()
    assert cli_main(["wal", "verify", rec]) == 0
    capsys.readouterr()
    assert cli_main(["replay", rec, "--no-ui"]) == 0
    assert capsys.readouterr().out.startswith("e: stored 2 removed 0 cleared 0 batches 1 gaps 0 malformed 2 "
                                              "(block size 1, token id 1)")


# ------------------------------------------------------------------ 3. a bad replay socket
def test_a_negative_seq_from_replay_is_skipped(ctx):
    replay = h.ReplaySocket(lambda start: [(0, [b"", b"kv", h.seq_bytes(-5), h.payload([STORE])]),
                                           (0, [b"", b"", h.seq_bytes(-1), b""])])
    sub, out = _subscriber(ctx, replay.endpoint)
    try:
        sub.catch_up()
        assert h.replayed(sub, BOUND_S)
        sub.on_message(h.message(3, [STORE]))  # a gap: asks replay again, from the seq expected
        assert h.replayed(sub, BOUND_S)
    finally:
        sub.close()
        replay.close()
    assert replay.asked == [0, 0]
    counts = _state(out).counts["e"]
    assert (counts.batches, counts.gaps) == (1, 3)


def test_a_replay_answer_with_no_end_marker_times_out(ctx):
    forever = [(0.2, [b"", b"kv", h.seq_bytes(s), h.payload([])]) for s in range(200)]  # 40 s of it
    replay = h.ReplaySocket(lambda start: forever)
    sub, out = _subscriber(ctx, replay.endpoint, timeout=0.5)
    try:
        sub.catch_up()
        assert h.replayed(sub, BOUND_S)  # 5 replay timeouts in all: 2.5 s
    finally:
        sub.close()
        replay.close()
    assert 0 < _state(out).counts["e"].replayed < 200


# ------------------------------------------------------------------ 4-6. the route proxy
@pytest.fixture
def proxy_on():
    """A proxy over the given engines (hostile.engine servers, or dead URLs), closed after."""
    made = []

    def make(*apis, client_timeout=1.0, engine_timeout=2.0):
        engines = [Engine(f"e{i}", f"tcp://127.0.0.1:{h.free_port()}", api=api) for i, api in enumerate(apis)]
        session = LiveSession(engines)
        proxy = RouteProxy("127.0.0.1", h.free_port(), LiveRouter("least_loaded", engines), session,
                           client_timeout=client_timeout, engine_timeout=engine_timeout)
        made.append((proxy, session))
        return proxy

    yield make
    for proxy, session in made:
        proxy.close()
        session.close()


def _post(proxy, body: bytes, headers: dict | None = None, path="/v1/completions") -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{proxy.address[1]}{path}", data=body,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=BOUND_S) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.mark.parametrize("body", [b"[1, 2]", b'"a prompt"', b"null", b'{"prompt": "1 2", "max_tokens": "many"}',
                                  b'{"prompt": "1 2", "max_tokens": 1180591620717411303424}',
                                  b'{"prompt": "1 2", "max_tokens": -3}', b'{"prompt": "1 2", "max_tokens": true}',
                                  b'{"prompt": {"a": 1}}', b"[" * 100_000])
def test_a_bad_body_is_400_with_no_traceback(proxy_on, capfd, body):
    proxy = proxy_on(h.engine().url)
    status, answer = _post(proxy, body)
    assert status == 400 and json.loads(answer)["error"]["type"] == "kvtui_route"
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("head, status", [
    (b"Content-Length: many\r\n", 400), (b"Content-Length: -5\r\n", 400), (b"", 411),
    (b"Content-Length: 157286400\r\n", 413),  # 150 MB announced: refused before a byte is read
    (b"Content-Length: 100\r\n", 408),  # 10 bytes sent, and then nothing
    (b"".join(b"X-%d: y\r\n" % i for i in range(200)), 431),
])
def test_a_bad_content_length_or_header_is_answered(proxy_on, capfd, head, status):
    proxy = proxy_on(h.engine().url)
    answer = h.raw_request(proxy.address[1], b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + head
                           + b"\r\n" + b'{"prompt":', wait_s=BOUND_S)
    assert h.status_of(answer) == status
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("tokens", [[[1, 2]], [2**70], "12"])
def test_a_tokenize_answer_that_is_no_token_list_is_502(proxy_on, tokens):
    status, answer = _post(proxy_on(h.engine(tokens=tokens).url), b'{"prompt": "1 2"}')
    assert status == 502 and b"tokenize" in answer


def test_an_engine_dying_mid_stream_ends_the_stream_with_an_error_event(proxy_on, capfd):
    status, answer = _post(proxy_on(h.engine(die_mid_stream=True).url), b'{"prompt": "1 2", "stream": true}')
    assert status == 200 and answer.startswith(h.STREAM[0])
    last = json.loads(answer.strip().split(b"\n\n")[-1].removeprefix(b"data: "))
    assert last["error"]["type"] == "kvtui_route" and last["error"]["code"] == 502
    assert "Traceback" not in capfd.readouterr().err


def test_a_silent_engine_is_504_and_a_dead_one_502(proxy_on):
    assert _post(proxy_on(h.engine(silent_s=4).url, engine_timeout=1.0), b'{"prompt": "1 2"}')[0] == 504
    dead = f"http://127.0.0.1:{h.free_port()}"
    assert _post(proxy_on(dead), b'{"prompt": "1 2"}')[0] == 502


def test_one_engine_down_does_not_stop_routing(proxy_on):
    """Tokenization comes from any engine that answers; the one that is down is not chosen
    (no metrics: both look idle, so least_loaded may pick it: then it is a 502, never a hang)."""
    up = h.engine()
    proxy = proxy_on(f"http://127.0.0.1:{h.free_port()}", up.url)
    statuses = [_post(proxy, b'{"prompt": "1 2 3 4"}')[0] for _ in range(6)]
    assert 200 in statuses and set(statuses) <= {200, 502}
    assert proxy.problems["tokenize"] == 0


# ------------------------------------------------------------------ 7. a restarted engine
def test_a_restarted_engine_starts_a_counted_epoch(ctx):
    from kvtui.live.delivery import Restarted

    sub, out = _subscriber(ctx)
    try:
        for seq in range(4):
            sub.on_message(h.message(seq, [h.stored([100 + seq], [seq] * 4)]))
        sub.on_message(h.message(2, [h.stored([100 + 2], [2] * 4)]))  # a duplicate: the same frames
        for seq in range(3):  # the new process: seq 0 again, other batches
            sub.on_message(h.message(seq, [h.stored([200 + seq], [9] * 4)]))
    finally:
        sub.close()
    assert sum(isinstance(d, Restarted) for d in out) == 1 and sub.duplicates == 1
    state = _state(out)
    counts = state.counts["e"]
    assert (counts.batches, counts.epochs, counts.restarts) == (7, 2, 1)
    assert state.held("e") == 3  # the old process's blocks went with it
    assert "epochs 2 (restarts 1)" in counts.line("e")


def test_all_blocks_cleared_begins_an_epoch_too():
    state = _state([Received("e", 0.0, tuple(h.message(0, [STORE, {"type": "AllBlocksCleared"}])))])
    assert (state.counts["e"].epochs, state.held("e")) == (2, 0)


# ------------------------------------------------------------------ 8. the scraper
@pytest.mark.parametrize("sample", ['vllm:kv_cache_usage_perc{engine="0"} NaN',
                                    'vllm:num_requests_running{engine="0"} +Inf',
                                    'vllm:num_requests_running{engine="0"} -4',
                                    'vllm:cache_config_info{block_size="16",num_gpu_blocks="²"} 1.0'])
def test_a_bad_sample_is_skipped_and_counted(sample):
    page = 'vllm:num_requests_waiting{engine="0"} 2.0\n' + sample + "\n"
    server = h.metrics_server(page)
    try:
        figures = scrape(server.url + "/metrics")
    finally:
        server.close()
    assert (figures.error, figures.waiting, figures.skipped) == (None, 2, 1)
    assert engine_figures(page) == figures


def test_a_trickling_metrics_server_is_cut_off_at_the_deadline():
    server = h.metrics_server('vllm:num_requests_waiting{engine="0"} 2.0\n' * 4, trickle_s=0.2)
    got = []
    try:
        assert _bounded(lambda: got.append(scrape(server.url + "/metrics", deadline_s=1.0)))
    finally:
        server.close()
    assert got[0].error.startswith("Slow: no whole page within 1 s")


def test_the_app_says_since_when_metrics_are_stale():
    from kvtui.live.delivery import Scraped
    from kvtui.live.metrics import EngineFigures
    from kvtui.run.live import LiveSource

    source = LiveSource([Scraped("e", 10.0, EngineFigures(num_gpu_blocks=8)),
                         Scraped("e", 12.5, EngineFigures(error="URLError: refused"))])
    source.goto(1)
    assert "stale" not in source.node_notes()["e"]
    source.goto(2)
    assert "metrics: URLError: refused (stale since 0.0 s)" in source.node_notes()["e"]


# ------------------------------------------------------------------ 9. the live app's memory
def test_the_live_history_is_capped_and_says_so():
    from kvtui.run.live import LiveSource

    run = LiveSource(live=True, kept=1_000, kept_bytes=1 << 30)
    for seq in range(5_000):
        run.receive(Received("e", float(seq), tuple(h.message(seq, [h.stored([seq], [seq % 7] * 4)]))))
    assert len(run.events) <= 1_000 and run.dropped + len(run.events) == run.end
    assert run.end == run.position == 10_000  # a batch, and the blocks it stored
    run.goto(0)  # as far back as is kept
    assert run.position == run.first == run.dropped > 0
    assert run.picture.engines.engines["e"].batches == run.first // 2  # the picture as it was there


# ------------------------------------------------------------------ 10. engine specs
@pytest.mark.parametrize("argument, message", [
    ("a=tcp://*:5557", "that is the engine's bind address; connect to tcp://HOST:5557"),
    ("a=tcp://h:5557,data_parallel_size=²", "must be an integer from 1 to 256"),
    ("a=tcp://h:0", "port 0 is not from 1 to 65535"),
    ("a=tcp://h:65536", "port 65536 is not from 1 to 65535"),
    ("a=tcp://h:99999", "port 99999 is not from 1 to 65535"),
    ("a=tcp://h:65535,data_parallel_size=2", "and port + 1 for the last rank"),
    ("a=ipc:///tmp/" + "x" * 200, "an ipc path is 1 to 100 bytes"),
])
def test_a_bad_engine_spec_is_exit_2_and_says_why(argument, message, capsys):
    assert cli_main(["live", "--engine", argument, "--no-ui", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--engine: ") and message in err and "internal error" not in err


def test_names_are_unique_after_rank_expansion(tmp_path, capsys):
    f = tmp_path / "e.yaml"
    f.write_text("engines:\n  - {name: a, kv_events: 'tcp://h:5557', data_parallel_size: 2}\n"
                 "  - {name: a/dp1, kv_events: 'tcp://h:6000'}\n")
    assert cli_main(["live", str(f), "--no-ui", "--duration", "1"]) == 2
    assert f"{f}:3: engine name 'a/dp1' (of 'a/dp1') is also a name of 'a'" in capsys.readouterr().err
    g = tmp_path / "g.yaml"
    g.write_text("engines:\n  - {name: a, kv_events: 'tcp://h:5557', data_parallel_size: 2}\n")
    assert cli_main(["live", str(g), "--engine", "a/dp0=tcp://h:7000", "--no-ui", "--duration", "1"]) == 2
    assert "is also a name of 'a'" in capsys.readouterr().err


@pytest.mark.parametrize("listen", ["127.0.0.1:²", "127.0.0.1:0", "127.0.0.1:70000"])
def test_a_bad_listen_port_is_exit_2(listen, capsys):
    assert cli_main(["live", "--engine", "a=tcp://127.0.0.1:1", "--no-ui", "--duration", "1",
                     "--route", "least_loaded", "--listen", listen]) == 2
    assert "is not HOST:PORT" in capsys.readouterr().err


# ------------------------------------------------------------------ 11. a zero tail
def _recording(directory: str, batches: int = 125) -> None:
    recorder = Recorder(directory)
    recorder.add(Watching("e", 0.0))
    for seq in range(batches):
        recorder.add(Received("e", 1.0 + seq, tuple(h.message(seq, [h.stored([seq], [seq] * 4)]))))
        if seq % 5 == 4:
            recorder.flush()
    recorder.close()


def _segment(directory: str) -> str:
    return os.path.join(directory, next(n for n in sorted(os.listdir(directory)) if n.startswith("wal-")))


def test_a_long_zero_tail_is_read_in_bounded_memory(tmp_path):
    rec = str(tmp_path / "rec")
    _recording(rec)
    with open(_segment(rec), "ab") as f:
        f.truncate(os.path.getsize(_segment(rec)) + (96 << 20))  # 96 MiB of zeros, as a sparse file
    from kvtui.live.recording import read_recording_report

    tracemalloc.start()
    try:
        reading = read_recording_report(rec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(reading.deliveries) == 126
    assert peak < 16 << 20  # the tail is mapped, never copied into memory
    cut = int(reading.warnings[0].split("cut short: ")[1].split(" bytes")[0].replace(",", ""))
    assert cut >= 96 << 20  # the zeros, and the preallocated space before them


# ------------------------------------------------------------------ 12. serve
CONCURRENCY = str(Path(__file__).resolve().parents[2] / "scenarios" / "concurrency.yaml")  # from any cwd


@pytest.mark.parametrize("port", ["-1", "70000", "0", "²", "http"])
def test_serve_refuses_a_bad_port(port, capsys):
    assert cli_main(["serve", CONCURRENCY, "--port", port]) == 2
    assert "is not a TCP port" in capsys.readouterr().err


def test_serve_warns_when_it_listens_beyond_this_machine(monkeypatch, capsys):
    import kvtui.cli.serve as serve

    class Server:
        def __init__(self, *args, **kw):
            self.kw = kw

        def serve(self):
            pass

    monkeypatch.setattr(serve, "_server_class", lambda: Server)
    scenario = CONCURRENCY
    assert cli_main(["serve", scenario, "--host", "0.0.0.0", "--port", "8123"]) == 0
    assert "anyone who can reach port 8123 there can open the app" in capsys.readouterr().err
    assert cli_main(["serve", scenario, "--host", "127.0.0.1"]) == 0
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ 13. a damaged last entry
@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damage_to_the_last_entry_is_told_with_counts(tmp_path, capsys, damage):
    rec = str(tmp_path / "rec")
    _recording(rec)
    segment = _segment(rec)
    data = bytearray(open(segment, "rb").read().rstrip(b"\xa5"))
    if damage == "truncate":
        data = data[:-7]
    else:
        data[-3] ^= 0x10
    with open(segment, "wb") as f:
        f.write(data)
    assert cli_main(["replay", rec, "--no-ui"]) == 0
    out, err = capsys.readouterr()
    batches = int(out.split(" batches ")[1].split()[0])
    assert 100 <= batches < 125
    assert "the recording's last write was cut short" in err and " bytes at wal-00000000.log@" in err


# ------------------------------------------------------------------ a silent engine
def test_no_ui_exits_2_when_no_engine_ever_answered(capsys):
    assert cli_main(["live", "--engine", f"vllm-a=tcp://127.0.0.1:{h.free_port()}", "--no-ui",
                     "--duration", "0.5", "--replay-timeout", "0.2"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("vllm-a: stored 0")
    assert "no batch from vllm-a in " in err and " s: is the address the engine's `--kv-events-config` endpoint?" in err
    assert "no engine sent anything in 0.5 s" in err


def test_a_silent_engine_is_named_after_ten_seconds():
    state = _state([Watching("vllm-a", 100.0), Watching("vllm-b", 100.0),
                    Received("vllm-b", 101.0, tuple(h.message(0, [STORE]))), Gap("vllm-a", 102.0, 0, 1)])
    assert state.silent(105.0) == []
    assert state.silent(110.0) == ["no batch from vllm-a in 10 s: is the address the engine's "
                                   "`--kv-events-config` endpoint?"]
    assert summary_lines(state)[1].startswith("vllm-b: stored 2")

