"""The engines file: which real engines `kvtui live` watches.

    engines:
      - name: vllm-0
        kv_events: tcp://10.0.0.5:5557     # the engine's PUB endpoint (required)
        replay: tcp://10.0.0.5:5558        # its ROUTER replay endpoint (optional)
        metrics: http://10.0.0.5:8000/metrics
        api: http://10.0.0.5:8000
        data_parallel_size: 2              # one subscriber per DP rank (optional, default 1)

Only `name` and `kv_events` are required. With data parallelism every rank publishes on its own
port, the base port plus the rank (vLLM 0.33.0 `ZmqEventPublisher.offset_endpoint_port`), so
the file names the base ports and kvtui subscribes to `NAME/dpR` for each rank R. It is read with the scenario loader's bounded YAML
(kvtui/scenario/safe_yaml.py) and every problem is reported as `file:line: message`.

What is checked, so that nothing reaches ZMQ that it would refuse with an error of its own: a
name is 1 to 64 printable characters and unique once ranks are expanded (`a/dp1` beside an `a`
with two ranks would merge two engines' counts into one line); a tcp endpoint is
`tcp://HOST:PORT` with an ASCII port from 1 to 65535 (the last rank's too); an ipc path fits
a Unix socket address (MAX_IPC_PATH bytes). `tcp://*:PORT` is how vLLM's
`--kv-events-config` names the address the engine binds; kvtui connects, and is told so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from kvtui.errors import InputError
from kvtui.scenario.loader import _line_of, _read_yaml

FIELDS = ("name", "kv_events", "replay", "metrics", "api", "data_parallel_size")
REQUIRED = ("name", "kv_events")
_TCP = re.compile(r"tcp://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})", re.ASCII)
_RANKS = re.compile(r"[0-9]{1,3}", re.ASCII)
MAX_IPC_PATH = 100  # a Unix socket's path (sun_path: 108 bytes on Linux, 104 elsewhere)
MAX_NAME = 64


@dataclass(frozen=True)
class Engine:
    name: str
    kv_events: str
    replay: str | None = None
    metrics: str | None = None
    api: str | None = None
    data_parallel_size: int = 1

    def ranks(self) -> list["Engine"]:
        """One engine per data-parallel rank, its ports offset by the rank (itself when 1)."""
        if self.data_parallel_size == 1:
            return [self]
        return [Engine(f"{self.name}/dp{r}", _offset(self.kv_events, r),
                       self.replay and _offset(self.replay, r), self.metrics, self.api)
                for r in range(self.data_parallel_size)]


def _offset(endpoint: str, rank: int) -> str:
    base, _, port = endpoint.rpartition(":")
    return f"{base}:{int(port) + rank}"


def load_engines(path: str) -> list[Engine]:
    """The engines of `path`; InputError with every problem found."""
    root = _read_yaml(Path(path), path)
    problems: list[tuple[str, int | None, str]] = []
    items = _engine_nodes(root, path, problems)
    engines = [e for e in (_engine(n, path, problems) for n in items) if e is not None]
    if not problems:  # engines and items line up only when every engine was read
        _check_unique(engines, items, path, problems)
    if problems:
        raise InputError(problems)
    return engines


def _engine_nodes(root: yaml.Node, file: str, problems: list) -> list[yaml.Node]:
    if not isinstance(root, yaml.MappingNode):
        problems.append((file, _line_of(root), "expected a mapping with `engines: [...]`"))
        return []
    top = {k.value: (k, v) for k, v in root.value}
    for key, _ in top.values():
        if key.value != "engines":
            problems.append((file, _line_of(key), f"unknown key {key.value!r} (expected `engines`)"))
    if "engines" not in top:
        problems.append((file, _line_of(root), "missing `engines`"))
        return []
    node = top["engines"][1]
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        problems.append((file, _line_of(node), "`engines` must be a non-empty list"))
        return []
    return node.value


def _engine(node: yaml.Node, file: str, problems: list) -> Engine | None:
    if not isinstance(node, yaml.MappingNode):
        problems.append((file, _line_of(node), "an engine must be a mapping (name, kv_events, ...)"))
        return None
    fields, ok = {}, True
    for key, value in node.value:
        if key.value not in FIELDS:
            problems.append((file, _line_of(key), f"unknown engine field {key.value!r} (known: {', '.join(FIELDS)})"))
            ok = False
        elif not isinstance(value, yaml.ScalarNode) or not value.value.strip():
            problems.append((file, _line_of(value), f"`{key.value}` must be a non-empty string"))
            ok = False
        else:
            fields[key.value] = value.value.strip()
    wrong = field_problems(fields)
    problems.extend((file, _line_of(node), message) for message in wrong)
    return Engine(**fields) if ok and not wrong else None


def field_problems(fields: dict) -> list[str]:
    """What is wrong with one engine's fields (strings as given); `data_parallel_size` becomes
    an int in place. The engines file and `--engine` share it."""
    problems = [f"engine is missing `{name}`" for name in REQUIRED if name not in fields]
    if "name" in fields and (why := _name_problem(fields["name"])):
        problems.append(why)
    ranks = _rank_problems(fields)
    for name in ("kv_events", "replay"):
        if name in fields:
            problems += _endpoint_problems(name, fields[name], fields.get("data_parallel_size", 1))
    for name in ("metrics", "api"):
        if name in fields and not fields[name].startswith(("http://", "https://")):
            problems.append(f"`{name}` {fields[name]!r} is not an http:// or https:// URL")
    return problems + ranks


def _name_problem(name: str) -> str | None:
    if not 0 < len(name) <= MAX_NAME or not name.isprintable():
        return f"engine name {name[:MAX_NAME]!r} must be 1 to {MAX_NAME} printable characters"
    return None


def _endpoint_problems(field: str, endpoint: str, ranks: int) -> list[str]:
    """Why `endpoint` is no ZMQ address kvtui can connect to (every rank's port in range)."""
    shown = repr(endpoint[:120])
    if endpoint.startswith("ipc://"):
        path = endpoint.removeprefix("ipc://")
        if not path or len(path.encode()) > MAX_IPC_PATH:
            return [f"`{field}` {shown}: an ipc path is 1 to {MAX_IPC_PATH} bytes (a Unix socket's address)"]
        return []
    if endpoint.startswith("tcp://*:"):
        port = endpoint.rpartition(":")[2]
        return [f"`{field}` {shown}: that is the engine's bind address; connect to tcp://HOST:{port} "
                "(HOST: the engine's machine, e.g. 127.0.0.1)"]
    match = _TCP.fullmatch(endpoint)
    if match is None:
        return [f"`{field}` {shown} is not a ZMQ endpoint (tcp://HOST:PORT or ipc://PATH)"]
    number = int(match.group(2))
    if not 0 < number <= 65535 - (ranks - 1):
        top = f" (and port + {ranks - 1} for the last rank)" if ranks > 1 else ""
        return [f"`{field}` {shown}: port {number} is not from 1 to 65535{top}"]
    return []


def _rank_problems(fields: dict) -> list[str]:
    """`data_parallel_size`: an integer 1..256, and only over tcp endpoints (ports to offset)."""
    raw = fields.pop("data_parallel_size", "1")
    if not _RANKS.fullmatch(raw) or not 1 <= int(raw) <= 256:
        fields["data_parallel_size"] = 1
        return [f"`data_parallel_size` {raw[:40]!r} must be an integer from 1 to 256"]
    fields["data_parallel_size"] = int(raw)
    if int(raw) > 1 and not fields.get("kv_events", "tcp://").startswith("tcp://"):
        return ["`data_parallel_size` above 1 needs tcp:// endpoints (one port per rank)"]
    return []


def engine_from_argument(text: str) -> Engine:
    """`--engine NAME=KV_EVENTS[,replay=..,metrics=..,api=..,data_parallel_size=N]`; InputError
    (as `--engine: message`) when it is not one."""
    name, sep, rest = text.partition("=")
    kv_events, *extra = rest.split(",")
    fields: dict = {"name": name.strip(), "kv_events": kv_events.strip()}
    problems = [] if sep and name.strip() else [f"{text!r} is not NAME=ENDPOINT"]
    for item in extra:
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or key not in FIELDS[2:] or not value:
            problems.append(f"{item!r} is not FIELD=VALUE with FIELD one of {', '.join(FIELDS[2:])}")
        fields[key] = value
    problems += [] if problems else field_problems(fields)
    if problems:
        raise InputError([("--engine", None, message) for message in problems])
    return Engine(**fields)


def _check_unique(engines: list[Engine], nodes: list, file: str, problems: list) -> None:
    for i, (engine, node) in enumerate(zip(engines, nodes)):
        if (why := name_clash(engines[:i], engine)) is not None:
            problems.append((file, _line_of(node), why))


def name_clash(before: list[Engine], engine: Engine) -> str | None:
    """Why `engine` cannot join `before`: one of its names (a rank's, once expanded) is
    already taken; None when every name is new."""
    taken = {rank.name: e.name for e in before for rank in e.ranks()}
    for rank in engine.ranks():
        if rank.name in taken:
            if rank.name == engine.name == taken[rank.name]:
                return f"engine {engine.name!r} is named twice"
            return (f"engine name {rank.name!r} (of {engine.name!r}) is also a name of {taken[rank.name]!r} "
                    "once data-parallel ranks are named NAME/dpR: their counts would merge")
    return None
