"""Prefill/decode disaggregation: the transfer's cost, the handoff's path, and its failures."""

from __future__ import annotations

import textwrap

import pytest

from kvtui.errors import InputError
from kvtui.events import (
    BatchStepped,
    BlocksStored,
    DecodeRouted,
    FirstToken,
    KVTransferDone,
    KVTransferStarted,
    KVTransferWaiting,
    NodeDown,
    RequestCompleted,
    RequestRejected,
    RouteDecided,
)
from kvtui.scenario import load_scenario
from kvtui.scenario.plan import node_plans
from kvtui.sim.engine import Simulation
from kvtui.profiles import catalog
from kvtui.scenario.links import LinkSpec, block_bytes, link_spec
from kvtui.sim.transfer import Link
from segments_support import outcome

LLAMA_8B_BLOCK = 2 * 32 * 8 * 128 * 2 * 16  # K and V x layers x KV heads x head_dim x bf16 x 16 tokens

NODES = """
    - {name: prefill-a, role: prefill, host: h1}
    - {name: prefill-b, role: prefill, host: h2}
    - {name: decode-a, role: decode, host: h1}
    - {name: decode-b, role: decode, host: h2}
"""


def scenario(tmp_path, nodes: str = NODES, router: str = "{policy: llm_d_pd}", workload: str = "", overrides=()):
    text = textwrap.dedent("""
        name: pd
        seed: 5
        model: llama-3.1-8b
        router: ROUTER
        cluster:
          block_size: 16
          hardware: h100-80gb
          nodes:
        NODES
        workload:
          duration_s: 8
          arrival: {process: poisson, rate: 3}
          groups:
            - {name: chat, system_prompt_tokens: 512, question_tokens: 300, output_tokens: 40, turns: 2, think_time_s: 1}
        """).replace("ROUTER", router).replace("NODES", textwrap.indent(textwrap.dedent(nodes).strip(), "    "))
    if workload:
        text = text.split("workload:")[0] + textwrap.dedent(workload)
    path = tmp_path / "pd.yaml"
    path.write_text(text)
    return load_scenario(path, list(overrides))


def run(sc):
    sim = Simulation(sc)
    events = []
    sim.subscribe(events.append)
    sim.run()
    return sim, events


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


def test_transfer_time_is_bytes_over_bandwidth_plus_latency(tmp_path):
    plans = {p.spec.name: p for p in node_plans(scenario(tmp_path))}
    assert block_bytes(catalog()[1]["llama-3.1-8b"], plans["decode-a"], 16) == LLAMA_8B_BLOCK
    rdma = link_spec(plans["prefill-a"], plans["decode-b"])  # different hosts
    nvlink = link_spec(plans["prefill-a"], plans["decode-a"])  # host h1
    nbytes = 40 * LLAMA_8B_BLOCK
    assert (rdma.kind, nvlink.kind) == ("RDMA", "NVLink")
    assert rdma.seconds(nbytes) == pytest.approx(nbytes / 50e9 + 10e-6, rel=1e-12)  # H100: 400 Gb/s NIC per GPU
    assert nvlink.seconds(nbytes) == pytest.approx(nbytes / 450e9 + 1e-6, rel=1e-12)  # NVLink 4, each way


def test_tensor_parallel_moves_shards_in_parallel(tmp_path):
    sc = scenario(tmp_path, overrides=["cluster.tensor_parallel=2"])
    plans = {p.spec.name: p for p in node_plans(sc)}
    spec = link_spec(plans["prefill-a"], plans["decode-b"])
    assert spec.lanes == 2
    assert spec.seconds(LLAMA_8B_BLOCK) == pytest.approx(LLAMA_8B_BLOCK / (2 * 50e9) + 10e-6)


def test_a_link_serves_transfers_in_arrival_order():
    link = Link(LinkSpec("RDMA", 1, 1e9, 0.001))
    assert link.book(0.0, 10**9) == (0.0, pytest.approx(1.001))
    assert link.book(0.5, 10**9) == (pytest.approx(0.501), pytest.approx(1.001))  # waits for the first


def test_a_run_transfers_what_the_decode_node_lacks_at_the_hand_calculated_cost(tmp_path):
    sim, events = run(scenario(tmp_path))
    started = of(events, KVTransferStarted)
    assert started and len(started) == len(of(events, KVTransferDone))
    for ev in started:
        assert ev.bytes == ev.blocks * LLAMA_8B_BLOCK
        bw, lat = (450e9, 1e-6) if ev.link == "NVLink" else (50e9, 10e-6)
        assert ev.seconds == pytest.approx(ev.bytes / bw + lat)
    assert any(ev.hit_blocks > 0 for ev in started), "a second turn finds its prefix on the decode node"
    first = {e.request: e for e in of(events, FirstToken)}
    start = {e.request: e for e in started}
    for done in of(events, KVTransferDone):
        assert first[done.request].node == done.decode_node
        assert first[done.request].t >= done.t  # TTFT includes the transfer
        assert done.waited_s >= start[done.request].seconds - 1e-12
    assert len(of(events, RequestCompleted)) == len(of(events, RouteDecided)) > 0
    assert sim.in_flight() == 0


def test_every_decision_records_both_picks(tmp_path):
    _, events = run(scenario(tmp_path))
    routed = {e.request: e for e in of(events, RouteDecided)}
    for d in of(events, DecodeRouted):
        assert routed[d.request].node == d.prefill_node and d.prefill_node.startswith("prefill")
        assert d.node.startswith("decode") and d.remote and d.reason
        assert {c.node for c in d.candidates} == {"decode-a", "decode-b"}
        assert {c.node for c in routed[d.request].candidates} == {"prefill-a", "prefill-b"}


def test_blocks_are_held_on_both_sides_in_flight(tmp_path):
    sim = Simulation(scenario(tmp_path))
    seen = []

    def check(ev):
        if isinstance(ev, KVTransferStarted) and ev.blocks:
            src, dst = sim.node_by_name[ev.prefill_node], sim.node_by_name[ev.decode_node]
            seen.append((src.pool.used_count > 0, dst.pool.used_count > 0, dst.inbound > 0))

    sim.subscribe(check, (KVTransferStarted,))
    sim.run()
    assert seen and all(all(s) for s in seen)


def test_both_policies_run_and_conditional_disaggregation_keeps_short_work_local(tmp_path):
    for policy in ("llm_d_pd", "dynamo_disagg"):
        _, events = run(scenario(tmp_path, router=f"{{policy: {policy}}}"))
        assert of(events, KVTransferStarted), policy
        _, events = run(scenario(tmp_path, router=f"{{policy: {policy}, disaggregation: {{local_prefill_tokens: 100000}}}}"))
        assert not of(events, KVTransferStarted), policy
        decisions = of(events, DecodeRouted)
        assert decisions and all(not d.remote and d.prefill_node == d.node for d in decisions)
        assert all(e.node.startswith("decode") for e in of(events, RequestCompleted))


FULL_DECODE = """
    - {name: prefill-a, role: prefill, max_num_seqs: 16}
    - {name: decode-a, role: decode, max_num_seqs: 1}
"""


def test_a_full_decode_node_makes_the_transfer_wait_or_rejects_it(tmp_path):
    _, events = run(scenario(tmp_path, FULL_DECODE))
    waits = of(events, KVTransferWaiting)
    assert waits and "no room" in waits[0].reason and "max_num_seqs 1" in waits[0].reason
    assert len(of(events, RequestCompleted)) == len(of(events, RouteDecided))
    _, events = run(scenario(tmp_path, FULL_DECODE, "{policy: llm_d_pd, disaggregation: {when_decode_full: reject}}"))
    rejected = of(events, RequestRejected)
    assert rejected and all("when_decode_full: reject" in r.reason for r in rejected)


def test_roles_are_checked_with_file_and_line(tmp_path):
    with pytest.raises(InputError) as e:
        scenario(tmp_path, router="{policy: load_prefix}")
    assert "pd.yaml:" in str(e.value) and "roles need a prefill/decode policy" in str(e.value)
    with pytest.raises(InputError) as e:
        scenario(tmp_path, nodes="- {name: a, role: prefill}\n- {name: b, role: prefill}")
    assert "no node can decode" in str(e.value)
    with pytest.raises(InputError) as e:
        scenario(tmp_path, overrides=["cluster.hardware=l4"])
    assert "has no rdma_gb_s" in str(e.value)


def test_the_result_document_reports_pools_and_transfers(tmp_path):
    from kvtui.report import pool_table
    from kvtui.run.result import result_document

    sim, events = run(scenario(tmp_path))
    section = result_document(sim, 0.0)["disaggregation"]
    assert set(section["pools"]) == {"prefill", "decode"}
    assert 0 < section["pools"]["prefill"]["utilisation"] < 1
    assert section["pools"]["prefill"]["prefill_tokens"] > 0 and section["pools"]["prefill"]["decode_tokens"] == 0
    started = of(events, KVTransferStarted)
    assert section["transfers"]["count"] == len(started) == section["requests"]["remote"]
    assert section["transfers"]["bytes"] == sum(e.bytes for e in started) == sum(x["bytes"] for x in section["links"])
    colocated = Simulation(scenario(tmp_path), policy="load_prefix").run()
    both = result_document(colocated, 0.0)["disaggregation"]
    assert set(both["pools"]) == {"both"} and both["transfers"]["count"] == 0  # roles ignored by a colocated policy
    assert pool_table([result_document(colocated, 0.0) | {"disaggregation": None}]) is None


def test_the_shipped_scenario_teaches_its_lesson():
    """scenarios/disaggregation.yaml's story: split, the decodes are not stalled by prefills (TPOT
    tail below the colocated run's on the same seed), and TTFT pays for the KV move."""
    sc = load_scenario("scenarios/disaggregation.yaml")
    colocated = Simulation(sc, policy="load_prefix").run().metrics.latency_ms()
    split_sim = Simulation(sc)
    events = []
    split_sim.subscribe(events.append, (DecodeRouted, KVTransferStarted))
    split = split_sim.run().metrics.latency_ms()
    assert split["tpot"]["p99"] < colocated["tpot"]["p99"]
    assert split["ttft"]["p50"] > colocated["ttft"]["p50"]
    links = {e.link for e in of(events, KVTransferStarted)}
    assert links == {"NVLink", "RDMA"}  # two servers: moves within and between them
    assert all(d.remote for d in of(events, DecodeRouted))


def test_the_views_show_roles_and_kv_in_flight_on_both_nodes(tmp_path):
    from kvtui.sim.view import node_view

    sim = Simulation(scenario(tmp_path))
    seen = []

    def look(ev):
        if ev.blocks:
            src, dst = node_view(sim.node_by_name[ev.prefill_node]), node_view(sim.node_by_name[ev.decode_node])
            seen.append((src.role, dst.role, src.moving[0] > 0, dst.moving[1] > 0))

    sim.subscribe(look, (KVTransferStarted,))
    sim.run()
    assert seen and all(s == ("prefill", "decode", True, True) for s in seen)
    assert all(n.outbound == n.inbound == 0 for n in sim.nodes)  # every move landed


def test_kvtui_run_prints_the_pools_line():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "kvtui", "run", "scenarios/disaggregation.yaml"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "prefill/decode: prefill busy" in out and "KV moves" in out and "prefilled remotely" in out


@pytest.mark.parametrize("node", ["prefill-a", "decode-a"])
def test_a_node_failure_during_handoffs_loses_their_kv_and_the_requests_start_over(tmp_path, node):
    """Fail a node of each pool while transfers are under way (and bring it back): every request
    ends (completed, rejected or failed), no block is leaked on either side, and the pools hold."""
    slow = "{memory_gb: 80, bf16_tflops: 989, hbm_tb_s: 3.35, interconnect_gb_s: 0.2, rdma_gb_s: 0.2}"  # ~0.3 s a move
    sc = scenario(tmp_path, overrides=[f"events=[{{at: 2.0, action: node_down, node: {node}}}, {{at: 4.0, action: node_up, node: {node}}}]",
                                       "workload.arrival.rate=8", f"hardware={{slow: {slow}}}", "cluster.hardware=slow"])
    sim = Simulation(sc)
    moving = []
    sim.subscribe(lambda ev: moving.append(sim.handoffs.in_flight), (NodeDown,))
    sim.run()
    m = sim.metrics
    assert moving[0] > 0, "the failure caught transfers under way"
    assert sim.in_flight() == 0
    assert m.completed + m.rejected + m.failed == m.arrived
    for n in sim.nodes:
        n.pool.check()
        assert n.pool.used_count == 0 and n.outbound == n.inbound == 0, n.name
    assert sim.handoffs.in_flight == 0 and not any(sim.handoffs.waiting.values())


def test_blocks_in_flight_are_moving_on_both_maps_from_start_to_landing(tmp_path):
    """Issue 22: every started transfer's moved blocks are MOVING on the prefill node's view and
    on the decode node's, as many as the event says; once it lands, no block of the pair is."""
    from kvtui.events import KVTransferDone
    from kvtui.sim.view import ViewCache, block_view
    from kvtui.views import MOVING

    sim = Simulation(scenario(tmp_path))
    views = ViewCache()
    started, landed = [], []

    def moving(name):
        return int((views.cluster(sim).node(name).gpu.state == MOVING).sum())

    def look(ev):
        pair = (moving(ev.prefill_node), moving(ev.decode_node))
        if isinstance(ev, KVTransferStarted):
            started.append((ev.blocks, *pair))
            first = int(sim.handoffs.blocks_in_flight(ev.decode_node)[0]) if ev.blocks else None
            if first is not None:
                b = block_view(sim, ev.decode_node, first)
                assert b.state == "moving" and f"arriving from {ev.prefill_node}" in b.transfer
        elif len(sim.handoffs.moving) == 0:
            landed.append(pair)

    sim.subscribe(look, (KVTransferStarted, KVTransferDone))
    sim.run()
    # a pair may carry other transfers at once, so the counts are at least this one's blocks
    assert started and all(src >= n and dst >= n for n, src, dst in started)
    assert any(n > 0 and src == dst == n for n, src, dst in started)
    assert landed and all(pair == (0, 0) for pair in landed)


def test_a_colocated_run_has_no_block_in_flight(tmp_path):
    from kvtui.events import RequestCompleted, RequestScheduled
    from kvtui.sim.view import ViewCache
    from kvtui.views import MOVING

    both = NODES.replace("role: prefill", "role: both").replace("role: decode", "role: both")
    sim = Simulation(scenario(tmp_path, nodes=both, router="{policy: cache_aware}"))
    assert sim.handoffs is None
    views, seen = ViewCache(), []
    sim.subscribe(lambda _ev: seen.append(sum(int((n.gpu.state == MOVING).sum()) for n in views.cluster(sim).nodes)),
                  (RequestScheduled, RequestCompleted))
    sim.run()
    assert seen and set(seen) == {0}


def test_dynamo_picks_the_decode_node_when_the_prefill_ends_llm_d_at_arrival(tmp_path):
    """Dynamo 1.6.1's PrefillRouter awaits the prefill before the decode router picks a worker;
    llm-d's pd-profile-handler runs its decode profile first (kvtui/sim/router/dynamo_disagg.py)."""
    for policy, at_arrival in (("dynamo_disagg", False), ("llm_d_pd", True)):
        _, events = run(scenario(tmp_path, router=f"{{policy: {policy}}}"))
        routed = {e.request: e for e in of(events, RouteDecided)}
        handed = {}
        for e in events:
            if isinstance(e, (KVTransferStarted, KVTransferWaiting)):
                handed.setdefault(e.request, e)
        decoded = of(events, DecodeRouted)
        assert decoded and all(d.remote for d in decoded), policy
        for d in decoded:
            if at_arrival:
                assert d.t == routed[d.request].t and d.seq == routed[d.request].seq + 1
            else:  # at the prefill's end: the handoff follows at the same instant; between them
                # only the blocks a decode segment in progress had already filled (Node._catch_up_segment)
                h = handed[d.request]
                between = [e for e in events if d.seq < e.seq < h.seq]
                assert d.t > routed[d.request].t and d.t == h.t
                assert all(isinstance(e, BlocksStored) and e.node == d.node for e in between), between


def test_a_decode_pick_at_the_prefill_end_leaves_the_prefill_node_out(tmp_path):
    both = """
        - {name: a, role: both, host: h1}
        - {name: b, role: both, host: h1}
    """
    _, events = run(scenario(tmp_path, both, router="{policy: dynamo_disagg}"))
    decoded = of(events, DecodeRouted)
    assert decoded and all(d.node != d.prefill_node for d in decoded)
    for d in decoded:
        mine = next(c for c in d.candidates if c.node == d.prefill_node)
        assert not mine.eligible and "was prefilled here" in mine.note


def test_no_decode_node_at_the_prefill_end_rejects_and_frees_the_prefill(tmp_path):
    down = "events=[{at: 0, action: node_down, node: decode-a}, {at: 0, action: node_down, node: decode-b}]"
    sim, events = run(scenario(tmp_path, router="{policy: dynamo_disagg}", overrides=[down]))
    rejected = of(events, RequestRejected)
    assert rejected and len(rejected) == len(of(events, RouteDecided)) == sim.metrics.arrived
    assert all("no node can take it" in r.reason and "decode-a: decode-a is down" in r.reason for r in rejected)
    assert all(n.pool.used_count == 0 and n.outbound == 0 for n in sim.nodes)
    assert sim.in_flight() == 0 and not of(events, KVTransferStarted)



SMALL_DECODE = """
    - {name: prefill-a, role: prefill, host: h1}
    - {name: decode-a, role: decode, host: h1, kv_blocks: 120}
"""


def test_a_transfer_reserved_mid_segment_leaves_the_segment_its_blocks(tmp_path):
    """A decode node in a multi-iteration segment gets a reservation from a prefill node: the
    iterations started by then take their blocks first and the segment is cut, so its commit
    finds them. Before the fix the reservation took blocks the segment had counted on, and its
    commit raised OutOfBlocks (benchmarks/disagg_study.py after the scheduler change)."""
    workload = """
        workload:
          duration_s: 6
          arrival: {process: poisson, rate: 6}
          groups:
            - {name: chat, system_prompt_tokens: 256, question_tokens: 200, output_tokens: 120, turns: 1}
        """
    sim, events = run(scenario(tmp_path, SMALL_DECODE, workload=workload))
    assert of(events, KVTransferWaiting)  # the decode pool was full at times
    assert len(of(events, RequestCompleted)) == sim.metrics.arrived


# ---------------------------------------------------------------- segments on and off, P/D
@pytest.mark.parametrize("nodes, router, seed", [
    (SMALL_DECODE, "{policy: llm_d_pd}", 5), (SMALL_DECODE, "{policy: dynamo_disagg}", 6),
    (NODES, "{policy: llm_d_pd}", 7), (NODES, "{policy: dynamo_disagg}", 8)],
    ids=("one-small-decode-llm_d_pd", "one-small-decode-dynamo", "two-by-two-llm_d_pd", "two-by-two-dynamo"))
def test_decode_segments_change_nothing_a_pd_run_shows(tmp_path, nodes, router, seed):
    """The same P/D run with multi-iteration decode segments and with single iterations: the
    same requests, routes, transfers (their waiting reasons' free blocks too) and completions
    at the same times, and each node's KV events in the same order. Before `Node.settle`, a
    transfer's waiting reason read the decode pool before the segment's iterations begun by
    then had taken their blocks (11 blocks free instead of 7), and the router's kv usage too."""
    workload = """
        workload:
          duration_s: 6
          arrival: {process: poisson, rate: 6}
          groups:
            - {name: chat, system_prompt_tokens: 256, question_tokens: 200, output_tokens: 120, turns: 2, think_time_s: 0.5}
        """
    sides = []
    for segments in (False, True):
        sim = Simulation(scenario(tmp_path, nodes, router=router, workload=workload, overrides=[f"seed={seed}"]))
        for node in sim.nodes:
            node.segments = segments
        events: list = []
        sim.subscribe(events.append)
        sim.run()
        sides.append((outcome(events), sum(isinstance(e, BatchStepped) for e in events)))
    (off, steps_off), (on, steps_on) = sides
    assert steps_on < steps_off, "no segment ran: the comparison shows nothing"
    assert any(e[0] == "KVTransferWaiting" for e in off[0]) or nodes is NODES
    assert on[1] == off[1]
    assert on[0] == off[0]
