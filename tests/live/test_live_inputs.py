"""Bad input to kvtui live: malformed messages are counted (never raised), a bad engines file
is `file:line: message` and exit 2. The wire decoding of the three event forms is checked
against real publishers in test_live_vllm.py; here, the shapes no publisher sends."""

from __future__ import annotations

import msgpack
import pytest

from kvtui.cli import main as cli_main
from kvtui.live.delivery import Received, ingest
from kvtui.live.engines import load_engines
from kvtui.errors import InputError
from kvtui.live.state import LiveState
from kvtui.live.wire import Batch, BlockStored, decode_message

SEQ0 = (0).to_bytes(8, "big")


def _msg(events, batch=None) -> list[bytes]:
    return [b"", SEQ0, msgpack.packb(batch if batch is not None else [1.0, events])]


STORED = ["BlockStored", [11, 12], None, list(range(8)), 4, None]  # Dynamo's mocker: no medium

MALFORMED = {
    "two frames": [b"", SEQ0],
    "a short seq": [b"", b"\x00", msgpack.packb([1.0, []])],
    "not msgpack": [b"", SEQ0, b"\xc1"],
    "not a batch": _msg(None, batch={"ts": 1}),
    "ts not a number": _msg(None, batch=["x", []]),
    "an unknown event": _msg([["BlockMoved", [1]]]),
    "a bad medium": _msg([["BlockRemoved", [1], "TAPE"]]),  # DISK is SGLang's
    "a float hash": _msg([["BlockRemoved", [1.5], "GPU"]]),
    "a zero block size": _msg([STORED[:4] + [0, None]]),
    "tokens not ints": _msg([{"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None,
                              "token_ids": ["a"], "block_size": 1, "lora_id": None, "medium": "GPU"}]),
    "an event that is a number": _msg([7]),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_message_is_counted(name):
    state = LiveState()
    ingest(state, Received("e", 0.0, tuple(MALFORMED[name])))
    ingest(state, Received("e", 0.0, tuple(_msg([STORED]))))
    assert (state.counts["e"].malformed, state.counts["e"].stored) == (1, 2)


def test_the_positional_form_without_medium_means_gpu():
    (event,) = decode_message(_msg([STORED])).events
    assert event == BlockStored((11, 12), None, tuple(range(8)), 4, None, "GPU")


def test_the_engines_file_reports_every_problem_with_its_line(tmp_path):
    f = tmp_path / "engines.yaml"
    f.write_text("engines:\n  - name: a\n    bogus: 1\n    kv_events: tcp://h:1\n  - kv_events: nope\n"
                 "  - {name: b, kv_events: 'ipc:///x', data_parallel_size: 2}\n")
    with pytest.raises(InputError) as e:
        load_engines(str(f))
    assert e.value.render().splitlines() == [
        f"{f}:3: unknown engine field 'bogus' (known: name, kv_events, replay, metrics, api, data_parallel_size)",
        f"{f}:5: engine is missing `name`",
        f"{f}:5: `kv_events` 'nope' is not a ZMQ endpoint (tcp://HOST:PORT or ipc://PATH)",
        f"{f}:6: `data_parallel_size` above 1 needs tcp:// endpoints (one port per rank)",
    ]


def test_data_parallel_ranks_offset_the_ports(tmp_path):
    f = tmp_path / "engines.yaml"
    f.write_text("engines:\n  - {name: a, kv_events: 'tcp://h:5557', replay: 'tcp://h:6000', data_parallel_size: 2}\n")
    ranks = load_engines(str(f))[0].ranks()
    assert [(r.name, r.kv_events, r.replay) for r in ranks] == [
        ("a/dp0", "tcp://h:5557", "tcp://h:6000"), ("a/dp1", "tcp://h:5558", "tcp://h:6001")]


@pytest.mark.parametrize("text", ["", "engines: []\n", "- a\n", "engines:\n  - {name: a, kv_events: 'tcp://h:1'}\n  - {name: a, kv_events: 'tcp://h:2'}\n"])
def test_the_live_command_exits_2_on_a_bad_file(tmp_path, capsys, text):
    f = tmp_path / "engines.yaml"
    f.write_text(text)
    assert cli_main(["live", str(f), "--no-ui", "--duration", "1"]) == 2
    assert capsys.readouterr().err.startswith(f"{f}")


def test_replay_of_what_is_not_a_recording_exits_2(tmp_path, capsys):
    assert cli_main(["replay", str(tmp_path / "nothing"), "--no-ui"]) == 2
    assert "no such recording directory" in capsys.readouterr().err


def test_replay_of_an_empty_directory_exits_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli_main(["replay", str(tmp_path / "empty"), "--no-ui"]) == 2
    assert "not a kvtui live recording" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["live", "engines.yaml"], ["replay", "session.rec"]])
def test_the_app_without_a_terminal_is_refused_with_the_headless_command(command, capsys, monkeypatch):
    monkeypatch.setattr("kvtui.cli.app.stdin_is_terminal", lambda: False)
    assert cli_main(command) == 2
    assert "--no-ui" in capsys.readouterr().err


def test_an_engine_on_the_command_line_takes_the_file_fields():
    from kvtui.live.engines import Engine, engine_from_argument

    assert engine_from_argument("a=tcp://h:5557,replay=tcp://h:5558,metrics=http://h:8000/metrics") == Engine(
        "a", "tcp://h:5557", "tcp://h:5558", "http://h:8000/metrics")
    assert [e.name for e in engine_from_argument("b=tcp://h:7000,data_parallel_size=2").ranks()] == ["b/dp0", "b/dp1"]


@pytest.mark.parametrize("argument, message", [
    ("tcp://h:5557", "is not NAME=ENDPOINT"),
    ("a=http://h:5557", "is not a ZMQ endpoint"),
    ("a=tcp://h:5557,colour=red", "is not FIELD=VALUE"),
    ("a=tcp://h:5557,data_parallel_size=0", "from 1 to 256"),
    ("a=tcp://h:5557,metrics=h:8000/metrics", "is not an http:// or https:// URL"),
])
def test_a_bad_engine_argument_exits_2_with_what_is_wrong(argument, message, capsys):
    assert cli_main(["live", "--engine", argument, "--no-ui", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--engine: ") and message in err


def test_live_needs_an_engine_and_each_name_once(tmp_path, capsys):
    assert cli_main(["live", "--no-ui", "--duration", "1"]) == 2
    assert "name the engines" in capsys.readouterr().err
    f = tmp_path / "e.yaml"
    f.write_text("engines:\n  - name: a\n    kv_events: tcp://127.0.0.1:1\n")
    assert cli_main(["live", str(f), "--engine", "a=tcp://127.0.0.1:2", "--no-ui", "--duration", "1"]) == 2
    assert "named twice" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--route", "cache_awre"], "did you mean"),
    (["--route", "predicted_latency"], "learns from simulation events"),
    (["--route", "llm_d_pd"], "route mode sends a request to one engine"),
    (["--route", "dynamo_disagg"], "route mode sends a request to one engine"),
    (["--route", "mooncake"], "route mode sends a request to one engine"),
    (["--route", "cache_aware", "--listen", "8000"], "is not HOST:PORT"),
    (["--listen", "127.0.0.1:8000"], "--listen goes with --route"),
])
def test_route_mode_arguments_are_checked(extra, message, capsys):
    assert cli_main(["live", "--engine", "a=tcp://127.0.0.1:1", "--no-ui", "--duration", "1", *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_stored_event_with_no_full_block_is_taken_without_error():
    """A first block (no parent) shorter than the block size chains no key: the index is told
    of nothing, where it used to index the first of no keys (IndexError out of `ingest`)."""
    state = LiveState()
    state.apply("e0", Batch(1, 0.0, (BlockStored((1,), None, (1, 2, 3), 16, None, "GPU"),), None))
    assert state.kv_index.keys_on("e0") == set()
