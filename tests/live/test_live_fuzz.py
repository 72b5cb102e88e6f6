"""A fuzz campaign over live mode's edges: KV-event messages, engine specs, damaged
recordings and proxy requests, mutated from good ones by a seeded RNG. Asserted: nothing raises
but the documented errors (InputError, exit 2), nothing hangs past a bound, memory stays
within a bound, and every bad input is counted.

Size knob: KVTUI_FUZZ_SCALE (default 1, a few seconds in CI): 400 messages, 40 engine specs,
20 damaged recordings and 20 proxy requests per unit; by hand KVTUI_FUZZ_SCALE=25 gives
10,000 messages, 1,000 specs, 500 recordings and 500 requests. Each test prints its figures
(run with -s to see them).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import msgpack
import zmq

from kvtui.cli import main as cli_main
from kvtui.errors import InputError
from kvtui.live.delivery import Received, Watching, ingest
from kvtui.live.engines import engine_from_argument, load_engines
from kvtui.live.recording import Recorder, read_recording, read_recording_report
from kvtui.live.session import summary_lines
from kvtui.live.state import LiveState
from kvtui.live.subscriber import Subscriber
from kvtui.store.fs import RealFS
from kvtui.store.scan import scan

from . import hostile as h

SCALE = float(os.environ.get("KVTUI_FUZZ_SCALE", "1"))
BOUND_S = 120 * max(1.0, SCALE)  # the whole of one campaign; reaching it is a hang
MEMORY_BOUND = 256 << 20  # traced by tracemalloc at the peak of one campaign


def count(unit: int) -> int:
    return max(1, int(unit * SCALE))


def _within(work) -> bool:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    return not thread.is_alive()


# ------------------------------------------------------------------ messages
HOSTILE = [2**63, 2**64 - 1, -1, -(2**63), True, False, None, "", "x" * 300, 1.5, math.nan, math.inf,
           [], {}, b"\x00" * 9, [[[[[[1]]]]]], {"type": "BlockStored"}, 0, 2**31]


def good_events(rng: random.Random, seq: int) -> list:
    """One batch's events in one of the forms publishers send (vLLM 0.33 / 0.11, SGLang, Dynamo)."""
    base = 1000 * seq
    tokens = [rng.randrange(50_000) for _ in range(8)]
    return rng.choice([
        [h.stored([base, base + 1], tokens)],
        [["BlockStored", [base], None, tokens[:4], 4, None, "GPU"], ["BlockRemoved", [base - 1000], "GPU"]],
        [h.stored([base], tokens[:4], medium=rng.choice(["CPU_PINNED", "DISK", "EXTERNAL"]), cache_salt="s")],
        [{"type": "BlockRemoved", "block_hashes": [base - 2000], "medium": None}, {"type": "AllBlocksCleared"}],
    ])


def mutate(rng: random.Random, value):
    """`value` with one part replaced by a hostile value, dropped, or nested deeper."""
    if isinstance(value, list) and value and rng.random() < 0.7:
        i = rng.randrange(len(value))
        return value[:i] + [mutate(rng, value[i])] + value[i + 1:]
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        if rng.random() < 0.2:
            del out[key]
        else:
            out[key] = mutate(rng, value[key])
        return out
    return rng.choice(HOSTILE)


def fuzzed_message(rng: random.Random, seq: int) -> list[bytes]:
    batch = [float(seq), good_events(rng, seq)] + ([rng.randrange(4)] if rng.random() < 0.3 else [])
    roll = rng.random()
    if roll < 0.45:
        batch = mutate(rng, batch)
    payload = msgpack.packb(batch, use_bin_type=True)
    if 0.45 <= roll < 0.55:  # bytes flipped or cut
        raw = bytearray(payload)
        for _ in range(rng.randrange(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        payload = bytes(raw[:rng.randrange(len(raw) + 1)])
    frames = [b"kv", h.seq_bytes(seq), payload]
    if rng.random() < 0.05:  # a seq that is far ahead, negative, short, or a restart
        frames[1] = rng.choice([h.seq_bytes(2**62), h.seq_bytes(-7), b"\x01", h.seq_bytes(0)])
    if rng.random() < 0.02:
        frames = frames[:rng.randrange(3)] + [b"extra"] * rng.randrange(2)
    return frames


def test_fuzzed_messages_are_counted_never_raised_and_recorded_faithfully(tmp_path):
    n, rng = count(400), random.Random(32)
    messages = [fuzzed_message(rng, seq) for seq in range(n)]
    ctx, out = zmq.Context(), []
    sub = Subscriber(ctx, "e", f"tcp://127.0.0.1:{h.free_port()}", None, out.append)
    recorder = Recorder(str(tmp_path / "rec"))
    state = LiveState()

    def deliver(d) -> None:
        out.append(d)
        recorder.add(d)
        ingest(state, d)

    sub.deliver = deliver
    deliver(Watching("e", 0.0))
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        assert _within(lambda: [sub.on_message(m) for m in messages])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sub.close()
        recorder.close()
        ctx.term()
    seconds = time.perf_counter() - t0
    counts = state.counts["e"]
    received = sum(isinstance(d, Received) and not d.replayed for d in out)
    assert received + sub.duplicates == n  # every message reached ingest, or was a duplicate
    assert counts.batches + counts.malformed == received  # and was a batch or counted as bad
    assert sum(counts.malformed_by_kind.values()) == counts.malformed > 0
    assert peak < MEMORY_BOUND
    replayed = LiveState()
    for d in read_recording(str(tmp_path / "rec")):
        ingest(replayed, d)
    assert summary_lines(replayed) == summary_lines(state)  # the recording is never poisoned
    print(f"\nfuzz messages: {n:,} in {seconds:.2f} s, peak {peak / 2**20:.1f} MiB traced; "
          f"batches {counts.batches:,}, malformed {counts.malformed:,} {dict(counts.malformed_by_kind)}, "
          f"gaps {counts.gaps}, restarts {counts.restarts}, duplicates {sub.duplicates}")


# ------------------------------------------------------------------ engine specs
NAMES = ["a", "vllm-0", "a/dp1", "²", "x" * 80, "", " ", "e\x00", "名前", "a b"]
ENDPOINTS = ["tcp://127.0.0.1:5557", "tcp://*:5557", "tcp://h:0", "tcp://h:65536", "tcp://h:99999", "tcp://h:²",
             "tcp://[::1]:5557", "tcp://h:-1", "tcp://h:", "tcp://:5557", "ipc:///tmp/kvtui-fuzz", "ipc://",
             "ipc:///tmp/" + "y" * 200, "http://h:1", "tcp://h:65535", "inproc://x", "tcp://h:5557/x"]
EXTRAS = ["replay=tcp://127.0.0.1:5558", "replay=tcp://*:1", "metrics=http://h/metrics", "metrics=h:1",
          "api=https://h", "data_parallel_size=2", "data_parallel_size=²", "data_parallel_size=300",
          "data_parallel_size=0", "colour=red", "=", "replay"]


def fuzzed_spec(rng: random.Random) -> str:
    """Half of them good in their name and endpoint, so both ways are well exercised."""
    extras = rng.sample(EXTRAS, rng.randrange(3))
    name = f"e{rng.randrange(99)}" if rng.random() < 0.5 else rng.choice(NAMES)
    endpoint = f"tcp://127.0.0.1:{rng.randrange(1, 65535)}" if rng.random() < 0.5 else rng.choice(ENDPOINTS)
    return ",".join([f"{name}={endpoint}"] + extras)


def test_fuzzed_engine_specs_are_engines_or_exit_2(tmp_path, capsys):
    n, rng = count(40), random.Random(33)
    ctx = zmq.Context()
    good = bad = 0
    try:
        for i in range(n):
            spec = fuzzed_spec(rng)
            try:
                engine = engine_from_argument(spec)
            except InputError as e:
                assert e.render().startswith("--engine: ")
                bad += 1
                continue
            good += 1
            for rank in engine.ranks():  # whatever was accepted, ZMQ takes
                sock = ctx.socket(zmq.SUB)
                sock.connect(rank.kv_events)
                sock.close(linger=0)
            f = tmp_path / f"e{i}.yaml"
            f.write_text("engines:\n  - " + json.dumps({"name": engine.name, "kv_events": engine.kv_events}) + "\n")
            assert [e.name for e in load_engines(str(f))] == [engine.name]
        if n >= 40:  # the command line end to end, a few times
            for spec in [fuzzed_spec(rng) for _ in range(max(2, n // 100))]:
                assert cli_main(["live", "--engine", spec, "--no-ui", "--duration", "0.05", "--replay-timeout", "0.05"]) == 2
    finally:
        ctx.term()
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    print(f"\nfuzz engine specs: {n:,}: {good:,} engines, {bad:,} refused as --engine: ...")


# ------------------------------------------------------------------ damaged recordings
def base_recording(directory: str) -> None:
    rng = random.Random(34)
    recorder = Recorder(directory)
    recorder.add(Watching("e", 0.0))
    for seq in range(125):
        recorder.add(Received("e", 1.0 + seq, tuple(fuzzed_message(rng, seq))))
        if seq % 5 == 4:
            recorder.flush()
    recorder.close()


def damage(rng: random.Random, directory: str) -> str:
    segment = os.path.join(directory, "wal-00000000.log")
    data = bytearray(open(segment, "rb").read())
    kind = rng.choice(["truncate", "flip", "zeros", "garbage", "fill", "current"])
    if kind == "truncate":
        data = data[:rng.randrange(len(data))]
    elif kind == "flip":
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "current":
        os.unlink(os.path.join(directory, "CURRENT"))
    else:
        size = rng.choice([1, 17, 4096, 1 << 20, 8 << 20])
        data += {"zeros": b"\0" * size, "fill": b"\xa5" * size, "garbage": rng.randbytes(size)}[kind]
    with open(segment, "wb") as f:
        f.write(data)
    return kind


def test_fuzzed_damaged_recordings_are_read_or_refused_as_verify_says(tmp_path):
    n, rng = count(20), random.Random(35)
    base = str(tmp_path / "base")
    base_recording(base)
    kinds: dict[str, int] = {}
    read = refused = warned = 0
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        for i in range(n):
            rec = str(tmp_path / f"r{i}")
            shutil.copytree(base, rec)
            kind = damage(rng, rec)
            kinds[kind] = kinds.get(kind, 0) + 1
            sound = not scan(RealFS(), rec).report.suspected_corruption  # what `wal verify` says
            try:
                reading = read_recording_report(rec)
            except InputError:
                assert not sound or kind == "truncate"  # a recording cut before its first engine
                refused += 1
            else:
                assert sound
                read += 1
                warned += bool(reading.warnings)
                state = LiveState()
                for d in reading.deliveries:
                    ingest(state, d)
            shutil.rmtree(rec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_BOUND
    print(f"\nfuzz recordings: {n:,} damaged {kinds} in {time.perf_counter() - t0:.2f} s, peak {peak / 2**20:.1f} MiB "
          f"traced: {read:,} read ({warned:,} with a warning of what was lost), {refused:,} refused as damaged")


# ------------------------------------------------------------------ proxy requests
BODIES = [b'{"prompt": "1 2 3 4 5", "max_tokens": 2}', b'{"prompt": "1 2", "stream": true}',
          b'{"messages": [{"role": "user", "content": "hi"}]}', b"[1]", b"null", b'"x"', b"{",
          b'{"prompt": "1", "max_tokens": 1e400}', b'{"prompt": "1", "max_tokens": 99999999999999999999}',
          b'{"prompt": 5}', b'{"messages": 5}', b"[" * 50_000, b'{"prompt": "1", "user": ' + b'"u"' * 1 + b"}"]


def fuzzed_request(rng: random.Random) -> bytes:
    body = rng.choice(BODIES)
    path = rng.choice(["/v1/completions"] * 6 + ["/v1/chat/completions"] * 2 + ["/v1/models", "/x", "/" + "a" * 70_000])
    method = rng.choice(["POST"] * 6 + ["GET", "PUT", "BREW"])
    length = rng.choice([str(len(body))] * 5 + ["-1", "x", "", str(len(body) + 5), "99999999999", "1e3"])
    head = [f"{method} {path} HTTP/1.1", "Host: x"] + ([f"Content-Length: {length}"] if length else [])
    head += [f"X-{i}: v" for i in range(rng.choice([0] * 9 + [120]))]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_fuzzed_proxy_requests_are_all_answered(capfd):
    from kvtui.live.engines import Engine
    from kvtui.live.proxy import RouteProxy
    from kvtui.live.routing import LiveRouter
    from kvtui.live.session import LiveSession

    n, rng = count(20), random.Random(36)
    up = h.engine()
    engines = [Engine("e0", f"tcp://127.0.0.1:{h.free_port()}", api=f"http://127.0.0.1:{h.free_port()}"),
               Engine("e1", f"tcp://127.0.0.1:{h.free_port()}", api=up.url)]
    session = LiveSession(engines, replay_timeout=0.2)
    proxy = RouteProxy("127.0.0.1", h.free_port(), LiveRouter("least_loaded", engines), session,
                       client_timeout=0.5, engine_timeout=5.0)
    requests = [fuzzed_request(rng) for _ in range(n)]
    answers: list = []
    try:
        with ThreadPoolExecutor(16) as pool:
            assert _within(lambda: answers.extend(pool.map(lambda r: h.raw_request(proxy.address[1], r, 15.0), requests)))
    finally:
        proxy.close()
        session.close()
        up.close()
    statuses = [h.status_of(a) for a in answers]
    assert None not in statuses  # every client got an answer
    refused = sum(s >= 400 for s in statuses)
    assert sum(proxy.problems.values()) >= refused  # every refusal is a counted problem (a log line)
    assert "Traceback" not in capfd.readouterr().err
    tally = {s: statuses.count(s) for s in sorted(set(statuses))}
    print(f"\nfuzz proxy: {n:,} requests, statuses {tally}, problems {dict(proxy.problems)}")

