"""An engine that claims endless distinct blocks and never removes them: kvtui's maps of it stay
under HELD_MAX (kvtui/live/state.py), the oldest blocks are let go and counted, and the count
shows in the engine's line (`live --no-ui`, `replay`)."""

from __future__ import annotations

import threading
import time

import zmq

from kvtui.cli import main as cli_main
from kvtui.live import state as live_state
from kvtui.live.delivery import Received, ingest
from kvtui.live.state import LiveState

from . import hostile as h

CAP = 60


def _endless(seq: int) -> list[bytes]:
    """Batch `seq`: a new prompt's first block (GPU), its child (CPU), and an orphan (GPU)."""
    return h.message(seq, [h.stored([3 * seq], [seq] * 4), h.stored([3 * seq + 1], [seq + 1] * 4, parent=3 * seq,
                                                                      medium="CPU"),
                           h.stored([3 * seq + 2], [7] * 4, parent=-1 - seq)])


def test_held_blocks_stay_under_the_cap_and_what_went_is_counted(monkeypatch):
    monkeypatch.setattr(live_state, "HELD_MAX", CAP)
    state = LiveState()
    for seq in range(1_000):
        ingest(state, Received("e", float(seq), tuple(_endless(seq))))
    counts, blocks = state.counts["e"], state.blocks["e"]
    held = blocks.held()
    assert CAP - CAP // 10 <= held <= CAP
    assert (counts.stored, counts.over_cap) == (3_000, 3_000 - held)
    assert len(blocks.gpu_cells.cells) + len(blocks.by_medium["CPU"]) == held
    assert len(state.index) <= held  # the index follows what is held
    assert len(state.kv_index.keys_on("e")) <= held
    assert len(state.kv_index._firsts) <= 2 * CAP  # pruned to what is held, past twice the cap
    assert f"over cap {3_000 - held} (oldest held blocks let go past {CAP:,})" in counts.line("e")
    newest = 3 * 999 + 1
    assert newest in blocks.by_medium["CPU"]  # the newest stay, the oldest went
    assert 1 not in blocks.by_medium["CPU"] and 0 not in blocks.gpu_cells.cells


def test_endless_lora_names_are_capped_and_counted(monkeypatch):
    monkeypatch.setattr(live_state, "ADAPTERS_MAX", 5)
    state = LiveState()
    for seq in range(20):
        ingest(state, Received("e", 0.0, tuple(h.message(seq, [h.stored([seq], [seq] * 4, lora_name=f"a{seq}")]))))
    assert (len(state.adapters), state.counts["e"].adapters_over_cap) == (5, 15)
    assert "adapters over cap 15" in state.counts["e"].line("e")


def test_headless_live_counts_the_blocks_let_go(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(live_state, "HELD_MAX", CAP)
    port, stop = h.free_port(), threading.Event()

    def publish() -> None:
        ctx = zmq.Context()
        pub = ctx.socket(zmq.PUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.bind(f"tcp://127.0.0.1:{port}")
        deadline, seq = time.monotonic() + h.LIFETIME_S, 0
        while not stop.wait(0.002) and time.monotonic() < deadline:
            pub.send_multipart(_endless(seq))
            seq += 1
        pub.close()
        ctx.term()

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    rec = str(tmp_path / "rec")
    try:
        code = cli_main(["live", "--engine", f"e=tcp://127.0.0.1:{port}", "--no-ui", "--duration", "1.5",
                         "--record", rec])
    finally:
        stop.set()
        thread.join(5)
    line = capsys.readouterr().out.splitlines()[0]
    assert code == 0 and " over cap " in line and f"let go past {CAP:,})" in line
    stored = int(line.split(" stored ")[1].split()[0])
    over = int(line.split(" over cap ")[1].split()[0])
    assert stored - CAP <= over <= stored - (CAP - CAP // 10)
    assert cli_main(["replay", rec, "--no-ui"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == line
