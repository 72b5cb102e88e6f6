"""kvtui live against vLLM's real publishers: ZmqEventPublisher on loopback, fed by the real
BlockPool running requests (tests/live/vllm_publishers.py).

Checked: what the subscriber counts equals what the publisher was handed (blocks stored and
removed), in both wire forms (0.33.0's tagged maps, 0.11.0's positional arrays); the blocks the
live state holds are exactly the pool's cached blocks, under the keys kvtui's own chained
hashing gives the same tokens; a subscriber that joins late is filled by the publisher's replay
socket; a gap larger than the publisher's replay buffer is recorded, not hidden; a recording
replays to the same figures, through the `kvtui live` and `kvtui replay` commands too.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kvtui.cli import main as cli_main
from kvtui.live.delivery import ingest
from kvtui.live.engines import Engine
from kvtui.live.recording import Recorder, read_recording
from kvtui.live.session import LiveSession, summary_lines
from kvtui.live.state import LiveState
from kvtui.sim.workload.hashing import chain_keys

from differential import peers

from . import vllm_publishers as vp
from .live_support import caught_up, prompts, pump, session_for, settle

REQUESTS = peers.cases(60)
POOL_BLOCKS = 24


@pytest.fixture(scope="module")
def new():
    return vp.load_new()


@pytest.fixture(scope="module")
def old(new):
    return vp.load_old(new)


def drive(v, pub: vp.Publisher, reqs: list[list[int]], convert=None) -> vp.PoolSource:
    source = vp.PoolSource(v, POOL_BLOCKS)
    for tokens in reqs:
        events = source.run(tokens)
        pub.publish(convert(events) if convert else events)
    return source


def join_late(session: LiveSession, pub: vp.Publisher, source: vp.PoolSource, reqs: list[list[int]]) -> None:
    """One batch, handled (its gap asked of replay while the buffer still holds what came just
    before it), then the rest."""
    pub.publish(source.run(reqs[0]))
    pump(session, pub)
    for tokens in reqs[1:]:
        pub.publish(source.run(tokens))
    pump(session, pub)


@pytest.mark.parametrize("form", ["tagged maps (0.33.0)", "positional arrays (0.11.0)"])
def test_counts_and_blocks_equal_what_the_pool_published(new, old, form):
    kv = new.kv_events if form.startswith("tagged") else old
    convert = None if kv is new.kv_events else (lambda evs: vp.as_old(new.kv_events, old, evs))
    pub = vp.Publisher(kv)
    session = session_for(pub)
    try:
        settle(session)
        reqs = prompts(1, REQUESTS)
        source = drive(new, pub, reqs, convert)
        pump(session, pub)
    finally:
        session.close()
        pub.close()
    counts = session.state.counts["e0"]
    stored, removed = pub.published.totals()
    assert removed > 0, "the pool is small enough that requests evict"
    assert (counts.stored, counts.removed, counts.batches) == (stored, removed, pub.sent)
    assert (counts.malformed, counts.gaps, counts.orphans, counts.unknown_removed) == (0, 0, 0, 0)
    held = session.state.blocks["e0"].by_medium["GPU"]
    assert set(held) == source.cached_hashes()
    _keys_are_kvtuis(session.state, reqs, source)


def _keys_are_kvtuis(state: LiveState, reqs: list[list[int]], source: vp.PoolSource) -> None:
    """Every held block's key is kvtui's chained key of the prompt prefix it ends."""
    utils = source.v.kv_cache_utils
    held = state.blocks["e0"].by_medium["GPU"]
    checked = 0
    for tokens in reqs:
        keys = chain_keys(np.asarray(tokens), vp.BS)
        for h, key in zip(source.hashes(tokens), keys):
            engine_hash = utils.maybe_convert_block_hash(h)
            if engine_hash in held:
                assert held[engine_hash] == key
                assert ("e0", "GPU") in state.index[key]
                checked += 1
    assert checked > 0


def test_a_late_subscriber_is_filled_by_replay(new):
    pub = vp.Publisher(new.kv_events)
    try:
        reqs = prompts(2, REQUESTS)
        source = vp.PoolSource(new, POOL_BLOCKS)
        for tokens in reqs[:20]:
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = session_for(pub)  # joins after 20 batches: seq 20 arrives first
        settle(session)
        for tokens in reqs[20:]:
            pub.publish(source.run(tokens))
        pump(session, pub)
        session.close()
    finally:
        pub.close()
    counts = session.state.counts["e0"]
    assert (counts.stored, counts.removed) == pub.published.totals()
    assert (counts.batches, counts.gaps) == (pub.sent, 0)
    assert counts.replayed == 20  # the 20 batches sent before it joined came from replay
    assert set(session.state.blocks["e0"].by_medium["GPU"]) == source.cached_hashes()


def test_an_engine_silent_after_the_join_is_caught_up_from_replay(new):
    """Joined after 12 batches, and the engine publishes nothing more: its blocks are there."""
    pub = vp.Publisher(new.kv_events)
    try:
        source = vp.PoolSource(new, POOL_BLOCKS)
        for tokens in prompts(4, 12):
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = session_for(pub)
        caught_up(session)
        session.close()
    finally:
        pub.close()
    counts = session.state.counts["e0"]
    assert (counts.stored, counts.removed, counts.batches, counts.gaps) == (*pub.published.totals(), 12, 0)
    assert counts.replayed == 12 and "(replay filled 12)" in counts.line("e0")
    assert set(session.state.blocks["e0"].by_medium["GPU"]) == source.cached_hashes()


def test_a_gap_beyond_the_replay_buffer_is_recorded(new):
    pub = vp.Publisher(new.kv_events, buffer_steps=3)
    try:
        reqs = prompts(3, 30)
        source = vp.PoolSource(new, POOL_BLOCKS)
        for tokens in reqs[:10]:
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = session_for(pub)
        settle(session)
        join_late(session, pub, source, reqs[10:])
        session.close()
    finally:
        pub.close()
    counts = session.state.counts["e0"]
    assert counts.gaps == 7  # seq 0..6 are gone: the buffer held 7, 8, 9 when kvtui joined and asked
    assert (counts.stored, counts.removed) == pub.published.totals(first=7)
    assert counts.batches == pub.sent - 7
    assert counts.replayed == 3  # 7, 8 and 9: what the buffer still held


def test_no_replay_socket_means_the_gap_is_recorded(new):
    pub = vp.Publisher(new.kv_events, replay=False)
    try:
        source = vp.PoolSource(new, POOL_BLOCKS)
        for tokens in prompts(4, 5):
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = session_for(pub, replay=False)
        settle(session)
        for tokens in prompts(5, 5):
            pub.publish(source.run(tokens))
        pump(session, pub)
        session.close()
    finally:
        pub.close()
    assert session.state.counts["e0"].gaps == 5
    assert session.state.counts["e0"].batches == 5
    assert session.state.counts["e0"].replayed == 0


def test_mediums_and_byte_hashes_from_the_real_event_classes(new):
    kv = new.kv_events
    stored = [kv.BlockStored(block_hashes=[b"\x01" * 32, b"\x02" * 32], parent_block_hash=None,
                             token_ids=list(range(8)), block_size=4, lora_id=None, medium=m, lora_name=None)
              for m in ("GPU", "CPU", "STORAGE")]
    removed = kv.BlockRemoved(block_hashes=[b"\x02" * 32], medium="CPU")
    pub = vp.Publisher(kv)
    session = session_for(pub)
    try:
        settle(session)
        pub.publish(stored)
        pub.publish([removed, kv.AllBlocksCleared()])
        pub.publish(stored[:1])
        pump(session, pub)
    finally:
        session.close()
        pub.close()
    state = session.state
    assert (state.counts["e0"].stored, state.counts["e0"].removed, state.counts["e0"].cleared) == (8, 1, 1)
    assert state.held("e0", "GPU") == 2 and state.held("e0", "CPU") == 0
    assert set(state.blocks["e0"].by_medium["GPU"]) == {b"\x01" * 32, b"\x02" * 32}


def test_a_recording_replays_to_the_same_figures(new, tmp_path):
    pub = vp.Publisher(new.kv_events, buffer_steps=4)
    directory = str(tmp_path / "rec")
    try:
        source = vp.PoolSource(new, POOL_BLOCKS)
        reqs = prompts(6, REQUESTS)
        for tokens in reqs[:8]:  # a late join: the 4 buffered batches replayed, 4 lost (a gap in the recording)
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = session_for(pub, Recorder(directory))
        settle(session)
        join_late(session, pub, source, reqs[8:])
        session.close()
    finally:
        pub.close()
    replayed = LiveState()
    for delivery in read_recording(directory):
        ingest(replayed, delivery)
    assert (session.state.counts["e0"].gaps, session.state.counts["e0"].replayed) == (4, 4)
    assert replayed.counts["e0"].replayed == 4  # the recording keeps which batches replay filled
    assert summary_lines(replayed) == summary_lines(session.state)
    assert replayed.blocks["e0"].by_medium == session.state.blocks["e0"].by_medium


def test_the_live_path_and_replay_give_one_event_stream(new, tmp_path):
    """What the app's live source takes from a session's listener (`kvtui live`) and what
    `kvtui replay` reads back from the session's recording are one stream of events (issue 33),
    a late join's replayed batches and gap included."""
    from kvtui.live.engines import Engine
    from kvtui.run import digest
    from kvtui.run.live import LiveSource

    pub = vp.Publisher(new.kv_events, buffer_steps=4)
    directory = str(tmp_path / "rec")
    live = LiveSource(live=True)
    try:
        source = vp.PoolSource(new, POOL_BLOCKS)
        reqs = prompts(7, REQUESTS)
        for tokens in reqs[:8]:
            pub.publish(source.run(tokens))
        pub.wait_sent()
        session = LiveSession([Engine("e0", pub.endpoint, pub.replay_endpoint)], Recorder(directory),
                              replay_timeout=2.0, listener=live.receive)
        settle(session)
        join_late(session, pub, source, reqs[8:])
        session.close()
    finally:
        pub.close()
    replayed = LiveSource(read_recording(directory))
    kinds = {ev.kind for ev in live.events}
    assert {"watched", "kv_batch", "stored", "gap"} <= kinds
    assert digest(live.events) == digest(replayed.events)


def test_the_live_and_replay_commands_print_the_same_lines(new, tmp_path, capsys):
    pub = vp.Publisher(new.kv_events)
    engines, directory = tmp_path / "engines.yaml", str(tmp_path / "rec")
    engines.write_text(f"engines:\n  - name: vllm-a\n    kv_events: {pub.endpoint}\n"
                       f"    replay: {pub.replay_endpoint}\n")
    codes = []
    cli = threading.Thread(target=lambda: codes.append(cli_main(  # one engine from the file, one from --engine
        ["live", str(engines), "--engine", f"silent=tcp://127.0.0.1:{vp.free_port()}",
         "--record", directory, "--no-ui", "--duration", "3"])))
    try:
        cli.start()
        settle()
        source = vp.PoolSource(new, POOL_BLOCKS)
        for tokens in prompts(7, 20):
            pub.publish(source.run(tokens))
        cli.join()
    finally:
        pub.close()
    live_out = capsys.readouterr().out
    assert codes == [0]
    stored, removed = pub.published.totals()
    assert live_out.splitlines()[0].startswith(f"vllm-a: stored {stored} removed {removed} ")
    assert live_out.splitlines()[1].startswith("silent: stored 0 removed 0 ")
    assert cli_main(["replay", directory, "--no-ui"]) == 0
    assert capsys.readouterr().out == live_out


def test_one_subscriber_per_data_parallel_rank(new):
    ports = vp.free_port_ranges(2, width=2)
    pubs = [vp.Publisher(new.kv_events, rank=r, ports=ports) for r in range(2)]
    engine = Engine("dp", f"tcp://127.0.0.1:{ports[0]}", f"tcp://127.0.0.1:{ports[1]}", data_parallel_size=2)
    session = LiveSession([engine])
    try:
        settle(session)
        for rank, pub in enumerate(pubs):
            source = vp.PoolSource(new, POOL_BLOCKS)
            for tokens in prompts(10 + rank, 10 + 5 * rank):
                pub.publish(source.run(tokens))
        deadline = time.monotonic() + 10
        while any(s.expected < p.sent for s, p in zip(session.subscribers, pubs)) and time.monotonic() < deadline:
            session.poll(0.05)
    finally:
        session.close()
        for pub in pubs:
            pub.close()
    for rank, pub in enumerate(pubs):
        counts = session.state.counts[f"dp/dp{rank}"]
        assert (counts.stored, counts.removed, counts.batches) == (*pub.published.totals(), pub.sent)
