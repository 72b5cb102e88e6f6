"""kvtui's KV index and `dynamo` policy against NVIDIA Dynamo 1.6.1's, answer by answer.

Dynamo runs in its own venv (`.ci/peers/dynamo.sh`), driven by tests/differential/dynamo_side.py:
its runtime-free selection core subscribes over ZMQ on loopback to one publisher per fake worker,
which sends vLLM-format KV event batches (`BlockStored` / `BlockRemoved`, GPU or CPU medium).
The same randomised stream goes to kvtui's `KVIndex` (keys = the events' block hashes) and to
its `dynamo` policy: stores and removals on random workers and tiers, queries, and request
lives (Dynamo picks a worker and books the request, kvtui follows it there; prefill complete;
free). For every query and every worker the
test compares Dynamo's device-tier overlap and host-tier blocks after it with kvtui's GPU run
and CPU-tier run (`NodeState.gpu_prefix`, `prefix`), and Dynamo's potential prefill tokens
(after its 1.0 / 0.75 cache credits) and decode blocks with kvtui's cost terms; their sum is
the cost both rank workers by. All must agree (100 %), and where kvtui's lowest cost is unique
Dynamo must pick that worker (Dynamo 1.6.1 draws exact ties at random, so a tie only needs
Dynamo's pick among kvtui's tied).

Size: `cases(200)` queries (KVTUI_DIFF_SCALE); agreement rates are printed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from kvtui.events import FirstToken, RequestCompleted
from kvtui.sim.request import Request
from kvtui.sim.router.base import Context
from kvtui.sim.router.dynamo import Dynamo
from kvtui.sim.router.index import KVIndex
from kvtui.sim.router.state import NodeState
from tests.differential.peers import cases, require

WORKERS = 4
BS = 4
SYMBOLS = 5
MEDIUM = {"gpu": "GPU", "cpu": "CPU"}


def block_hash(prefix: tuple[int, ...]) -> int:
    """The block's key: fixed by every block before it, a positive 63-bit integer."""
    return int.from_bytes(hashlib.blake2b(repr(prefix).encode(), digest_size=8).digest(), "big") >> 1


def tokens(blocks: tuple[int, ...], start: int = 0) -> list[int]:
    """The token ids of blocks[start:]: each block's symbol s and position in it give the ids."""
    return [s * 100 + (start + i) % 7 * 10 + j for i, s in enumerate(blocks[start:]) for j in range(BS)]


class DynamoSide:
    def __init__(self, peer: Path) -> None:
        script = Path(__file__).with_name("dynamo_side.py")
        self.proc = subprocess.Popen([str(peer / "bin" / "python"), str(script)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline() or '{"error": "the Dynamo side exited"}')
        assert "error" not in reply, f"{cmd['op']}: {reply['error']}"
        return reply

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Mirror:
    """What each worker holds per tier, so that the stream only makes events vLLM could send:
    a stored run continues blocks the tier holds, a removal takes a block no held block extends."""

    def __init__(self) -> None:
        self.held: dict[tuple[int, str], set[tuple[int, ...]]] = {}

    def tier(self, worker: int, medium: str) -> set[tuple[int, ...]]:
        return self.held.setdefault((worker, medium), set())

    def store(self, rng, worker: int, medium: str, blocks: tuple[int, ...]) -> dict | None:
        held = self.tier(worker, medium)
        start = 0
        while start < len(blocks) and blocks[: start + 1] in held:
            start += 1
        if start == len(blocks):
            return None
        end = int(rng.integers(start + 1, len(blocks) + 1))
        held.update(blocks[: i + 1] for i in range(start, end))
        parent = block_hash(blocks[:start]) if start else None
        hashes = [block_hash(blocks[: i + 1]) for i in range(start, end)]
        return {"stored": {"hashes": hashes, "parent": parent, "tokens": tokens(blocks[:end], start), "medium": MEDIUM[medium]}}

    def remove(self, rng, worker: int, medium: str) -> dict | None:
        held = self.tier(worker, medium)
        parents = {b[:-1] for b in held}
        leaves = sorted(b for b in held if b not in parents)
        if not leaves:
            return None
        leaf = leaves[int(rng.integers(len(leaves)))]
        held.discard(leaf)
        return {"removed": {"hashes": [block_hash(leaf)], "medium": MEDIUM[medium]}}


def prompt(rng, stems: list[tuple[int, ...]]) -> tuple[int, ...]:
    stem = stems[int(rng.integers(len(stems)))]
    keep = int(rng.integers(0, len(stem) + 1))
    return stem[:keep] + tuple(int(s) for s in rng.integers(SYMBOLS, size=int(rng.integers(1, 5))))


def snapshots(index: KVIndex, keys: list[int], workers: int = WORKERS) -> list[NodeState]:
    """The Router's snapshots of the workers for a policy that reads tiers (as Router.observe)."""
    match = index.match(keys)
    out = []
    for w in range(workers):
        prefix = match[str(w)].consecutive if str(w) in match else 0
        gpu = index.gpu_run(str(w), keys, prefix) if prefix else 0
        out.append(NodeState(str(w), None, prefix, 0.0, len(keys), 0, 0, 0, 100, 100, -1, -1, gpu))
    return out


def event_of(cls, rid: str, node: str):
    if cls is FirstToken:
        return FirstToken(0, 0.0, rid, node, 0.0)
    return RequestCompleted(0, 0.0, rid, node, "s", "g", 0, 1, 0, "miss", 0.0, 0.0, 0.0, 0)


def compare(ours: dict[str, tuple], theirs: dict) -> list[str]:
    """Per worker: (device, host, prefill tokens, decode blocks) of both; the differences."""
    out = []
    for w, mine in ours.items():
        t = theirs.get(w, {})
        got = (t.get("device", 0), t.get("host", 0), t.get("prefill_tokens"), t.get("decode_blocks"))
        if got != mine:
            out.append(f"worker {w}: kvtui {mine}, Dynamo {got}")
    return out


def run_pair(peer: Path, queries: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    stems = [tuple(int(s) for s in rng.integers(SYMBOLS, size=8)) for _ in range(3)]
    side, index, mirror = DynamoSide(peer), KVIndex(), Mirror()
    policy = Dynamo()
    ctx = Context(rng=np.random.default_rng(seed), block_size=BS, sessions={})
    stats = {"queries": 0, "index_agree": 0, "cost_agree": 0, "cpu_tier_queries": 0, "routed": 0, "picks_agree": 0,
             "first_diffs": []}
    live: list[tuple[str, str, bool]] = []  # request, worker, prefill done
    try:
        side.ask(op="start", workers=WORKERS, block_size=BS)
        while stats["queries"] < queries:
            roll = rng.random()
            if roll < 0.45:
                apply_event(rng, side, index, mirror, stems)
                continue
            if roll < 0.6 and live:
                advance(rng, side, policy, live)
                continue
            query(rng, side, index, policy, ctx, stems, stats, live)
        return stats
    finally:
        side.close()


def apply_event(rng, side: DynamoSide, index: KVIndex, mirror: Mirror, stems) -> None:
    w, medium = int(rng.integers(WORKERS)), ("cpu" if rng.random() < 0.3 else "gpu")
    blocks = prompt(rng, stems)
    ev = mirror.store(rng, w, medium, blocks) if rng.random() < 0.65 else mirror.remove(rng, w, medium)
    if ev is None:
        return
    side.ask(op="events", worker=w, events=[ev])
    if "stored" in ev:
        index.add(str(w), ev["stored"]["hashes"], medium)
    else:
        index.remove(str(w), ev["removed"]["hashes"], medium)


def advance(rng, side: DynamoSide, policy: Dynamo, live: list) -> None:
    """A live request finishes its prefill, or ends."""
    i = int(rng.integers(len(live)))
    rid, node, prefilled = live[i]
    if not prefilled and rng.random() < 0.6:
        side.ask(op="prefill_complete", id=rid)
        policy.on_event(event_of(FirstToken, rid, node))
        live[i] = (rid, node, True)
        return
    side.ask(op="free", id=rid)
    policy.on_event(event_of(RequestCompleted, rid, node))
    live.pop(i)


def query(rng, side: DynamoSide, index: KVIndex, policy: Dynamo, ctx: Context, stems, stats: dict, live: list) -> None:
    blocks = prompt(rng, stems)
    keys = [block_hash(blocks[: i + 1]) for i in range(len(blocks))]
    extra = int(rng.integers(0, BS))  # a partial last block: prompt tokens beyond the full blocks
    prompt_tokens = tokens(blocks) + list(range(9000, 9000 + extra))
    rid = f"r{stats['queries']}"
    req = Request(rid, "s", "g", 0, len(prompt_tokens), 1, tuple(keys))
    states = snapshots(index, keys)
    terms = policy.terms(req, ctx, states)
    ours = {s.name: (s.gpu_prefix, s.prefix - s.gpu_prefix, round(terms[s.name][0] * BS), round(terms[s.name][1]))
            for s in states}
    theirs = side.ask(op="query", tokens=prompt_tokens)["workers"]
    diffs = compare(ours, theirs)
    stats["queries"] += 1
    stats["cpu_tier_queries"] += any(s.prefix > s.gpu_prefix for s in states)
    index_ok = all(ours[w][:2] == (theirs.get(w, {}).get("device", 0), theirs.get(w, {}).get("host", 0)) for w in ours)
    stats["index_agree"] += index_ok
    stats["cost_agree"] += not diffs
    if diffs and len(stats["first_diffs"]) < 5:
        stats["first_diffs"].append(f"{rid} {blocks}+{extra}: " + "; ".join(diffs))
    if rng.random() < 0.5:
        lowest = min(terms[s.name][2] for s in states)
        ours_best = {s.name for s in states if terms[s.name][2] == lowest}
        policy.decide(req, ctx, states)  # as the Router does before `routed`
        node = str(side.ask(op="route", id=rid, tokens=prompt_tokens)["worker"])
        stats["routed"] += 1
        stats["picks_agree"] += node in ours_best
        policy.routed(req, node, states)
        live.append((rid, node, False))


def test_dynamo_index_and_costs_agree_with_dynamo_1_6_1():
    peer = require("dynamo")
    stats = run_pair(peer, cases(200), seed=18)
    q = stats["queries"]
    print(
        f"\nkvtui vs Dynamo 1.6.1 over {q} queries x {WORKERS} workers: index {stats['index_agree']}/{q} "
        f"({100 * stats['index_agree'] / q:.2f} %), costs {stats['cost_agree']}/{q} "
        f"({100 * stats['cost_agree'] / q:.2f} %), picks {stats['picks_agree']}/{stats['routed']}; "
        f"{stats['cpu_tier_queries']} queries with CPU-tier blocks",
        file=sys.stderr,
    )
    assert stats["cpu_tier_queries"] > 0
    assert stats["index_agree"] == q and stats["cost_agree"] == q, "\n".join(stats["first_diffs"])
    assert stats["picks_agree"] == stats["routed"] > 0


def test_a_constructed_cpu_tier_case_picks_as_dynamo_does():
    """Worker 0 holds the whole 8-block prompt, 2 blocks in GPU memory and 6 more in the CPU tier;
    worker 1 holds 7 blocks in GPU memory. Crediting the CPU tier fully (kvtui before 1.6.1's
    weights) prefers worker 0; Dynamo credits it 2 + 0.75 x 6 = 6.5 blocks against 7 and picks 1."""
    peer = require("dynamo")
    side, index = DynamoSide(peer), KVIndex()
    blocks = (1, 2, 3, 4, 0, 1, 2, 3)
    keys = [block_hash(blocks[: i + 1]) for i in range(len(blocks))]
    held = [(0, "gpu", 0, 2), (0, "cpu", 0, 8), (1, "gpu", 0, 7)]
    try:
        side.ask(op="start", workers=2, block_size=BS)
        for worker, medium, start, end in held:
            ev = {"stored": {"hashes": keys[start:end], "parent": keys[start - 1] if start else None,
                             "tokens": tokens(blocks[:end], start), "medium": MEDIUM[medium]}}
            side.ask(op="events", worker=worker, events=[ev])
            index.add(str(worker), keys[start:end], medium)
        req = Request("r", "s", "g", 0, len(blocks) * BS, 1, tuple(keys))
        states = snapshots(index, keys, workers=2)
        ours = Dynamo().decide(req, Context(rng=np.random.default_rng(0), block_size=BS, sessions={}), states)
        full_credit = Dynamo(credits=(1.0, 1.0)).decide(req, Context(rng=np.random.default_rng(0), block_size=BS, sessions={}), states)
        theirs = str(side.ask(op="route", id="r", tokens=tokens(blocks))["worker"])
    finally:
        side.close()
    assert (full_credit.node, ours.node, theirs) == ("0", "1", "1")
