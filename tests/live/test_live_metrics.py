"""Scraping engines' /metrics: a local HTTP server serves an exposition in the names and labels
of vLLM 0.33.0's PrometheusStatLogger, read at test time from the vLLM wheel (peer `vllm`), and
kvtui's session reads the figures from it once a second, records them and replays them; a server
that is not there is shown as unreachable, not a crash."""

from __future__ import annotations

import ast
import re
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kvtui.live import metrics as m
from kvtui.live.delivery import Scraped, ingest
from kvtui.live.engines import Engine
from kvtui.live.recording import Recorder, read_recording
from kvtui.live.session import LiveSession
from kvtui.live.state import LiveState
from kvtui.run.live import LiveSource

from differential import peers

from . import vllm_publishers as vp


def vllm_metric_names() -> set[str]:
    """Every metric name (a string `vllm:name`) in vLLM 0.33.0's v1/metrics/loggers.py, from the wheel."""
    wheel = next((peers.require("vllm") / "wheel").glob("vllm-0.33.0-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        tree = ast.parse(z.read("vllm/v1/metrics/loggers.py"))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and re.fullmatch(r"vllm:[a-z_]+", node.value)}


@pytest.fixture(scope="module")
def names():
    return vllm_metric_names()


def test_the_names_kvtui_reads_are_vllms(names):
    read = {m.RUNNING, m.WAITING, m.USAGE, m.CACHE_INFO, m.QUERIES.removesuffix("_total"), m.HITS.removesuffix("_total")}
    assert read <= names, read - names


def exposition(names: set[str], engines: int = 2) -> str:
    """What a vLLM server with `engines` engine cores serves (Prometheus text format; counters
    get `_total`), for a model with 1000 GPU blocks of 16 tokens per core."""
    assert {m.RUNNING, m.WAITING, m.USAGE, m.CACHE_INFO} <= names
    lines = ["# HELP vllm:num_requests_running Number of requests in model execution batches.",
             "# TYPE vllm:num_requests_running gauge"]
    for e in range(engines):
        labels = f'engine="{e}",model_name="tiny"'
        lines += [f"{m.RUNNING}{{{labels}}} {3 + e}.0", f"{m.WAITING}{{{labels}}} {e}.0",
                  f"{m.USAGE}{{{labels}}} {0.25 + 0.5 * e}", f"{m.QUERIES}{{{labels}}} {400.0 * (e + 1)}",
                  f"{m.HITS}{{{labels}}} {100.0 * (e + 1)}",
                  f'{m.CACHE_INFO}{{block_size="16",cache_dtype="auto",engine="{e}",num_gpu_blocks="1000",'
                  f'num_cpu_blocks="None"}} 1.0']
    return "\n".join(lines + ["vllm:other_metric_with_a_weird_value{} NaN", "not a sample", ""])


class _Server:
    def __init__(self, body: str):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_figures_of_a_two_core_server(names):
    f = m.engine_figures(exposition(names))
    assert (f.num_gpu_blocks, f.block_size, f.running, f.waiting) == (1000, 16, 7, 1)
    assert f.kv_usage == pytest.approx(0.5) and f.hit_rate == pytest.approx(300 / 1200)
    assert m.engine_figures("garbage\n# nothing") == m.EngineFigures()


def _session_until(session: LiveSession, engine: str, seconds: float = 5.0):
    deadline = time.monotonic() + seconds
    while engine not in session.state.figures and time.monotonic() < deadline:
        session.poll(0.05)
    return session.state.figures.get(engine)


def test_a_session_scrapes_records_and_replays_the_metrics(names, tmp_path):
    server = _Server(exposition(names, engines=1))
    engine = Engine("e0", f"tcp://127.0.0.1:{vp.free_port()}", metrics=server.url)
    session = LiveSession([engine], Recorder(str(tmp_path / "rec")))
    try:
        figures = _session_until(session, "e0")
    finally:
        session.close()
        server.close()
    assert figures == m.EngineFigures(1000, 16, 0.25, 3, 0, 400, 100)
    replayed = LiveState()
    deliveries = read_recording(str(tmp_path / "rec"))
    for d in deliveries:
        ingest(replayed, d)
    assert any(isinstance(d, Scraped) for d in deliveries)
    assert replayed.figures == session.state.figures
    source = LiveSource(deliveries)
    source.goto(source.end)
    assert source.view().nodes[0].num_blocks == 1000  # the map is the engine's pool
    assert "kv 25% of 1000 blocks" in source.node_notes()["e0"]


def test_an_unreachable_metrics_server_is_shown_not_raised():
    engine = Engine("e0", f"tcp://127.0.0.1:{vp.free_port()}", metrics=f"http://127.0.0.1:{vp.free_port()}/metrics")
    session = LiveSession([engine])
    try:
        figures = _session_until(session, "e0")
    finally:
        session.close()
    assert figures.error and "Connection refused" in figures.error and figures.running is None


def test_the_cache_config_fields_kvtui_reads_are_vllms():
    """`vllm:cache_config_info`'s labels are CacheConfig's fields (its metrics_info)."""
    wheel = next((peers.require("vllm") / "wheel").glob("vllm-0.33.0-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        tree = ast.parse(z.read("vllm/config/cache.py"))
    config = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "CacheConfig")
    fields = {n.target.id for n in config.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert {"num_gpu_blocks", "block_size"} <= fields
    assert any(isinstance(n, ast.FunctionDef) and n.name == "metrics_info" for n in config.body)
