"""Route mode's etcd backend without an etcd: the snapshot's keys round-trip into a state that
routes as the leader's did, the keeper's batching and fencing, and the `--metadata` usage errors.
(The real thing, two kvtui processes and a SIGKILL: tests/live/test_live_etcd.py.)"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from kvtui.cli import main as cli_main
from kvtui.live.etcd_election import Leadership
from kvtui.live.etcd_keeper import MAX_OPS, EtcdKeeper
from kvtui.live.etcd_snapshot import BUCKETS, Snapshot, bucket_of
from kvtui.live.engines import Engine
from kvtui.live.etcd_url import parse_target
from kvtui.live.metrics import EngineFigures
from kvtui.live.proxy import RouteProxy
from kvtui.live.routing import LiveRouter
from kvtui.live.session import LiveSession
from kvtui.live.state import LiveState
from kvtui.live.wire import Batch, BlockRemoved, BlockStored

from . import vllm_publishers as vp

BS = 4
PREFIX = b"kvtui/t/"


class Link:
    """What the keeper asks of a link: the prefix, and `submit`, answered by `answer`."""

    def __init__(self, answer=True):
        self.target, self.sent, self.answer = parse_target("etcd://127.0.0.1:2379/t"), [], answer
        self.pending: list = []

    def submit(self, work, done):
        self.pending.append(done)
        self.sent.append(work.args[0])  # partial(keeper._txn, out): the keys of one transaction

    def finish(self) -> None:
        while self.pending:
            future: Future = Future()
            if isinstance(self.answer, Exception):
                future.set_exception(self.answer)
            else:
                future.set_result(self.answer)
            self.pending.pop(0)(future)


def _stored(hashes, parent, first_token):
    tokens = tuple(range(first_token, first_token + BS * len(hashes)))
    return BlockStored(tuple(hashes), parent, tokens, BS, None, "GPU")


def _keeper(link, router_sessions=None):
    state = LiveState()
    session = SimpleNamespace(lock=threading.Lock(), state=state,
                              subscribers=[SimpleNamespace(name="e0", expected=0), SimpleNamespace(name="e1", expected=0)])
    router = SimpleNamespace(sessions=router_sessions or {}, touched=None)
    leadership = Leadership(lease=1, revision=7)
    return EtcdKeeper(link, leadership, session, router, Snapshot()), session, router, leadership


def _written(link) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for sent in link.sent:
        out.update(sent)
    return out


def test_the_snapshot_restores_the_index_and_the_block_maps_the_leader_had():
    link = Link()
    keeper, session, router, _ = _keeper(link)
    state = session.state
    state.apply("e0", Batch(0, 0.0, (_stored([b"a1", b"a2", b"a3"], None, 0),), None))
    state.apply("e1", Batch(0, 0.0, (_stored([11, 12], None, 100),), None))
    state.apply("e0", Batch(1, 0.0, (BlockRemoved((b"a3",), "GPU"),), None))
    session.subscribers[0].expected, session.subscribers[1].expected = 2, 1
    router.sessions["s1"] = "e1"
    router.touched.add("s1")
    state.scraped("e0", 0.0, EngineFigures(block_size=BS))
    keeper.take()
    link.finish()
    snapshot = Snapshot()
    for key, value in _written(link).items():
        snapshot.read(PREFIX, key, value)
    assert snapshot.seqs == {"e0": 2, "e1": 1} and snapshot.routes() == {"s1": "e1"} and snapshot.block_size == BS
    restored = LiveState()
    snapshot.restore(restored)
    for engine in ("e0", "e1"):
        assert dict(restored.blocks[engine].by_medium["GPU"]) == dict(state.blocks[engine].by_medium["GPU"])
        assert restored.held(engine) == state.held(engine)
    prompts = [list(state.blocks["e0"].by_medium["GPU"].values()), list(state.blocks["e1"].by_medium["GPU"].values())]
    for keys in prompts:
        assert {n: m.consecutive for n, m in restored.kv_index.match(keys).items()} == \
               {n: m.consecutive for n, m in state.kv_index.match(keys).items()}
    # the next event whose parent the snapshot holds is keyed, not an orphan
    restored.apply("e0", Batch(2, 0.0, (_stored([b"a4"], b"a2", 50),), None))
    assert restored.counts["e0"].orphans == 0


def test_batches_merge_while_a_transaction_is_out_and_each_key_keeps_its_newest_value():
    link = Link()
    keeper, session, _, _ = _keeper(link)
    session.state.apply("e0", Batch(0, 0.0, (_stored([1], None, 0),), None))
    keeper.take()
    session.state.apply("e0", Batch(1, 0.0, (_stored([1 + BUCKETS], None, 10),), None))  # same bucket
    session.subscribers[0].expected = 2
    keeper.take()
    assert len(link.pending) == 1  # the second batch waits for the first transaction
    link.finish()
    keeper.take()
    link.finish()
    assert keeper.txns == 2
    snapshot = Snapshot()
    for key, value in _written(link).items():
        snapshot.read(PREFIX, key, value)
    assert {h for (_, h) in snapshot.blocks[("e0", bucket_of(1))]} == {1, 1 + BUCKETS}
    assert snapshot.seqs["e0"] == 2


def test_a_batch_over_the_transaction_limit_goes_out_in_several():
    link = Link()
    keeper, session, _, _ = _keeper(link)
    for e, name in enumerate(("e0", "e1")):
        session.state.apply(name, Batch(0, 0.0, (_stored(list(range(1000 * e, 1000 * e + BUCKETS)), None, 0),), None))
    keeper.take()
    link.finish()
    while keeper.waiting:
        keeper.take()
        link.finish()
    assert all(len(sent) <= MAX_OPS for sent in link.sent) and len(link.sent) == 2
    assert len(_written(link)) == 2 * BUCKETS + 2  # every bucket of both engines, and their seqs


def test_a_failed_fence_loses_leadership_and_an_unreachable_etcd_keeps_the_keys():
    link = Link(answer=ConnectionError("down"))
    keeper, session, _, leadership = _keeper(link)
    session.state.apply("e0", Batch(0, 0.0, (_stored([5], None, 0),), None))
    keeper.take()
    link.finish()
    assert keeper.failures == 1 and keeper.waiting and not leadership.lost.is_set()
    link.answer = False  # the leader key is another process's now
    keeper.take()
    link.finish()
    assert leadership.lost.is_set() and "another kvtui" in leadership.why
    keeper.take()
    assert not link.pending  # a deposed leader writes nothing more


@pytest.mark.parametrize("args, said", [
    (["--metadata", "etcd://127.0.0.1:2379"], "--metadata goes with --route"),
    (["--route", "round_robin", "--metadata", "http://127.0.0.1:2379"], "--metadata: 'http://127.0.0.1:2379' is not etcd://"),
    (["--route", "round_robin", "--metadata", "etcd://127.0.0.1:99999"], "--metadata: '127.0.0.1:99999' is not HOST:PORT"),
    (["--route", "round_robin", "--metadata", "etcd://h:1/a b"], "--metadata: cluster name"),
    (["--route", "round_robin", "--metadata", "etcd://h:1", "--lease-ttl", "1"], "--lease-ttl must be"),
])
def test_bad_metadata_options_exit_2(args, said, capsys):
    assert cli_main(["live", "--engine", "e=tcp://127.0.0.1:5557", "--no-ui", "--duration", "1", *args]) == 2
    assert said in capsys.readouterr().err


def test_without_aetcd_metadata_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "aetcd", None)  # an import of it raises ImportError
    argv = ["live", "--engine", "e=tcp://127.0.0.1:5557", "--no-ui", "--duration", "1",
            "--route", "round_robin", "--metadata", "etcd://127.0.0.1:2379"]
    assert cli_main(argv) == 2
    assert "--metadata: etcd needs the aetcd client: pip install 'kvtui[etcd]'" in capsys.readouterr().err


def test_a_router_that_lost_its_lease_answers_503_and_says_why():
    engine = Engine("e0", f"tcp://127.0.0.1:{vp.free_port()}", api=f"http://127.0.0.1:{vp.free_port()}")
    session = LiveSession([engine])
    proxy = RouteProxy("127.0.0.1", vp.free_port(), LiveRouter("round_robin", [engine]), session,
                       gate=lambda: "another kvtui holds the routing lease")
    request = urllib.request.Request(f"http://127.0.0.1:{proxy.address[1]}/v1/completions",
                                     data=b'{"model": "m", "prompt": "1 2"}', headers={"Content-Type": "application/json"})
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 503
        assert "no longer routes: another kvtui holds" in json.loads(refused.value.read())["error"]["message"]
        assert proxy.problems["not the leader"] == 1
    finally:
        proxy.close()
        session.close()
