"""The scenario loader: YAML -> Scenario, every problem at file:line, --set overrides, schema."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from kvtui.errors import InputError
from kvtui.scenario import Scenario, load_scenario, scenario_json_schema
from kvtui.scenario.model import Dist, NodeSpec, PrefixGroup, RatePoint, ScriptedEvent
from kvtui.scenario.schema import field_types, is_dataclass_type, mapping_item, split_optional, tuple_item

GOOD = """\
name: good
description: every kind of field
seed: 7
model: qwen2.5-7b
cluster:
  block_size: 32
  hardware: h100-80gb
  nodes:
    - name: a
      kv_blocks: 128
      chunked_prefill: false
    - name: b
      hardware: l4
      gpu_memory_utilization: 0.8
      max_queue: 0
latency:
  model: linear
  prefill_ms_per_token: 2          # an int for a float field
router:
  policy: round_robin
  fill: best_fit
workload:
  arrival:
    process: gamma
    rate: 1e3                      # a string to YAML 1.1, a number to us
    burstiness: 4
    schedule:
      - {at: 0, rate: 1}
      - {at: 30.5, rate: 2}
  group_order: cycle
  sessions: 10
  groups:
    - name: chat
      weight: 2
      system_prompt_tokens: 256
      question_tokens: 64          # Dist shorthand
      output_tokens: {dist: lognormal, mean: 160, sigma: 0.6, min: 16, max: 512}
      turns: {dist: uniform, low: 1, high: 4}
      pin_on: [a]
events:
  - {at: 5, action: node_down, node: b, in_flight: fail}
  - {at: 9, action: node_up, node: b}
  - {at: 12, action: control_plane_crash}
metadata:
  fsync: always
  snapshot_every: 100
until_s: 60
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems(path, overrides=()) -> list[tuple[str, int | None, str]]:
    with pytest.raises(InputError) as info:
        load_scenario(path, overrides)
    return info.value.problems


def one_problem(path, overrides=()) -> tuple[str, int | None, str]:
    found = problems(path, overrides)
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------------------------------------
# Good files


def test_good_scenario_builds_the_right_objects(tmp_path):
    s = load_scenario(write(tmp_path, GOOD))
    assert isinstance(s, Scenario)
    assert (s.name, s.seed, s.model, s.until_s) == ("good", 7, "qwen2.5-7b", 60.0)
    assert s.cluster.block_size == 32
    assert s.cluster.nodes == (
        NodeSpec(name="a", kv_blocks=128, chunked_prefill=False),
        NodeSpec(name="b", hardware="l4", gpu_memory_utilization=0.8, max_queue=0),
    )
    assert s.latency.model == "linear"
    assert s.latency.prefill_ms_per_token == 2.0 and isinstance(s.latency.prefill_ms_per_token, float)
    assert (s.router.policy, s.router.fill) == ("round_robin", "best_fit")
    arrival = s.workload.arrival
    assert (arrival.process, arrival.rate, arrival.burstiness) == ("gamma", 1000.0, 4.0)
    assert arrival.schedule == (RatePoint(0.0, 1.0), RatePoint(30.5, 2.0))
    assert (s.workload.group_order, s.workload.sessions, s.workload.trace) == ("cycle", 10, None)
    group = s.workload.groups[0]
    assert group == PrefixGroup(
        name="chat",
        weight=2.0,
        system_prompt_tokens=256,
        question_tokens=Dist(dist="fixed", value=64.0),
        output_tokens=Dist(dist="lognormal", mean=160.0, sigma=0.6, min=16.0, max=512.0),
        turns=Dist(dist="uniform", low=1.0, high=4.0),
        pin_on=("a",),
    )
    assert s.events == (
        ScriptedEvent(at=5.0, action="node_down", node="b", in_flight="fail"),
        ScriptedEvent(at=9.0, action="node_up", node="b"),
        ScriptedEvent(at=12.0, action="control_plane_crash"),
    )
    assert (s.metadata.fsync, s.metadata.snapshot_every, s.metadata.dir) == ("always", 100, None)


def test_absent_keys_take_the_dataclass_defaults(tmp_path):
    assert load_scenario(write(tmp_path, "name: tiny\n")) == Scenario(name="tiny")


def test_null_is_accepted_only_for_optional_fields(tmp_path):
    s = load_scenario(write(tmp_path, "until_s: null\nworkload:\n  trace:\n"))
    assert s.until_s is None and s.workload.trace is None
    assert one_problem(write(tmp_path, "seed:\n"))[1:] == (1, "seed: expected an integer, got nothing (an empty value)")


def test_trace_path_is_resolved_against_the_scenario_directory(tmp_path, monkeypatch):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.jsonl").write_text("{}\n")
    path = write(tmp_path, "workload:\n  trace: {format: mooncake, path: traces/t.jsonl, limit: 5}\n")
    monkeypatch.chdir("/")
    trace = load_scenario(path).workload.trace
    assert trace.path == str(tmp_path / "traces" / "t.jsonl")
    assert trace.limit == 5


def test_yaml_anchors_and_merge_keys_work(tmp_path):
    path = write(tmp_path, """\
        cluster:
          nodes:
            - &base {name: a, kv_blocks: 8, max_num_seqs: 4}
            - <<: *base
              name: b
        """)
    a, b = load_scenario(path).cluster.nodes
    assert (a.name, b.name) == ("a", "b")
    assert (b.kv_blocks, b.max_num_seqs) == (8, 4)


# ---------------------------------------------------------------------------------------------
# One problem of each kind, at the right file:line


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    assert one_problem(path) == (str(path), None, "no such file")


def test_empty_file(tmp_path):
    path = write(tmp_path, "# only a comment\n")
    assert one_problem(path) == (str(path), None, "the scenario file is empty")


def test_a_directory_or_binary_file_is_a_problem_not_a_traceback(tmp_path):
    assert one_problem(tmp_path)[2] == "is a directory, not a scenario file"
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"name: x\nseed: \xff\n")
    assert one_problem(binary)[1:] == (2, "not UTF-8 text (byte 0xff)")
    control = write(tmp_path, "name: a\x07b\n")
    assert one_problem(control)[1] == 1


def test_top_level_must_be_a_mapping(tmp_path):
    path = write(tmp_path, "- a\n- b\n")
    file, line, message = one_problem(path)
    assert (file, line) == (str(path), 1)
    assert "top level" in message and "got a list" in message


def test_yaml_syntax_error_has_the_line_of_the_mark(tmp_path):
    path = write(tmp_path, "name: x\ncluster:\n  block_size: 16\n nodes: [\n")
    file, line, message = one_problem(path)
    assert (file, line) == (str(path), 4)
    assert message.startswith("YAML syntax error: ")


def test_unknown_key_suggests_the_closest(tmp_path):
    path = write(tmp_path, """\
        cluster:
          nodes:
            - name: a
              kv_block: 10
        """)
    assert one_problem(path) == (
        str(path), 4, "unknown key 'kv_block' in cluster.nodes[0]; did you mean 'kv_blocks'?"
    )


def test_unknown_key_with_nothing_close_lists_the_valid_keys(tmp_path):
    _, line, message = one_problem(write(tmp_path, "name: x\nzzz: 1\n"))
    assert line == 2
    assert message.startswith("unknown key 'zzz' at the top level; valid keys: name, description, seed")


def test_wrong_type(tmp_path):
    path = write(tmp_path, "cluster:\n  block_size: abc\n")
    assert one_problem(path) == (str(path), 2, "cluster.block_size: expected an integer, got 'abc'")


@pytest.mark.parametrize(
    "text, message",
    [
        ("seed: true\n", "seed: expected an integer, got true"),
        ("seed: 1.5\n", "seed: expected an integer, got 1.5"),
        ("until_s: yes\n", "until_s: expected a number, got yes"),
        ("until_s: .inf\n", "until_s: expected a finite number, got .inf"),
        ("name: [a]\n", "name: expected a string, got a list"),
        ("cluster: 3\n", "cluster: expected a mapping, got 3"),
        ("events: {at: 1}\n", "events: expected a list, got a mapping"),
        ("workload:\n  groups:\n    - turns: many\n",
         "workload.groups[0].turns: expected a number or a distribution mapping, got 'many'"),
        ("cluster:\n  nodes:\n    - chunked_prefill: 1\n",
         "cluster.nodes[0].chunked_prefill: expected true or false, got 1"),
    ],
)
def test_type_mismatches(tmp_path, text, message):
    assert one_problem(write(tmp_path, text))[2] == message


def test_unsafe_yaml_tags_are_refused(tmp_path):
    _, line, message = one_problem(write(tmp_path, "seed: 1\nname: !!python/object:os.system x\n"))
    assert line == 2 and "unsupported YAML tag" in message


@pytest.mark.parametrize(
    "text, message",
    [
        ("seed: -1\n", "seed: must be between 0 and 9223372036854775807, got -1"),
        ("cluster:\n  block_size: 5000\n", "cluster.block_size: must be between 1 and 4096, got 5000"),
        ("cluster:\n  nodes:\n    - gpu_memory_utilization: 1.5\n",
         "cluster.nodes[0].gpu_memory_utilization: must be between 0.05 and 1, got 1.5"),
        ("workload:\n  groups:\n    - turns: -2\n", "workload.groups[0].turns: must be between 0 and 1000000000, got -2"),
    ],
)
def test_out_of_range(tmp_path, text, message):
    _, line, got = one_problem(write(tmp_path, text))
    assert got == message
    assert line == text.count("\n")


def test_bad_literal_lists_the_choices(tmp_path):
    path = write(tmp_path, "latency:\n  model: roofl\n")
    assert one_problem(path) == (
        str(path), 2, "latency.model: 'roofl' is not one of: linear, roofline; did you mean 'roofline'?"
    )


def test_duplicate_keys(tmp_path):
    path = write(tmp_path, "seed: 1\nname: x\nseed: 2\n")
    assert one_problem(path)[1:] == (3, "duplicate key 'seed' at the top level (first at line 1)")


# ---------------------------------------------------------------------------------------------
# Cross-field checks


def test_node_names_must_be_unique(tmp_path):
    path = write(tmp_path, "cluster:\n  nodes:\n    - name: a\n    - name: b\n    - name: a\n")
    _, line, message = one_problem(path)
    assert line == 5
    assert message.startswith("cluster.nodes[2].name: duplicate node name 'a' (also cluster.nodes[0])")


def test_pin_on_and_events_must_name_existing_nodes(tmp_path):
    path = write(tmp_path, """\
        cluster:
          nodes: [{name: node-a}, {name: node-b}]
        workload:
          groups:
            - pin_on: [node-a, nod-a]
        events:
          - {action: node_down, node: nodeb}
        """)
    assert problems(path) == [
        (str(path), 5, "workload.groups[0].pin_on[1]: unknown node 'nod-a'; did you mean 'node-a'?"),
        (str(path), 7, "events[0].node: unknown node 'nodeb'; did you mean 'node-b'?"),
    ]


def test_an_unknown_node_is_reported_with_a_bad_node_field_not_after_it(tmp_path):
    """Issue 35: cross-references were checked only once every node built cleanly, so a bad
    `kv_blocks` hid an unknown node until it was fixed; the docs say every problem at once. A
    node whose name failed still holds the check back (its references would read as unknown)."""
    path = write(tmp_path, """\
        cluster:
          nodes: [{name: node-a, kv_blocks: -5}, {name: node-b}]
        events:
          - {action: node_down, node: nodeb}
        """)
    assert [p[2].split(":")[0] for p in problems(path)] == ["cluster.nodes[0].kv_blocks", "events[0].node"]
    path = write(tmp_path, """\
        cluster:
          nodes: [{name: [x]}, {name: node-b}]
        events:
          - {action: node_down, node: node-b}
        """)
    assert [p[2].split(":")[0] for p in problems(path)] == ["cluster.nodes[0].name"]


def test_an_unknown_node_in_a_big_cluster_lists_a_few_names_and_the_count(tmp_path):
    nodes = ", ".join(f"{{name: n{i:02d}}}" for i in range(64))
    path = write(tmp_path, f"cluster:\n  nodes: [{nodes}]\nevents:\n  - {{action: node_down, node: zzz}}\n")
    assert problems(path) == [
        (str(path), 4, "events[0].node: unknown node 'zzz'; nodes: n00, n01, n02, n03, n04, n05, n06, …, n63 (64 in all)"),
    ]


def test_a_short_node_list_is_named_whole(tmp_path):
    path = write(tmp_path, "cluster:\n  nodes: [{name: a1}, {name: b2}]\nevents:\n  - {action: node_down, node: zzz}\n")
    assert problems(path) == [(str(path), 4, "events[0].node: unknown node 'zzz'; nodes: a1, b2")]


def test_node_down_and_node_up_need_a_node(tmp_path):
    path = write(tmp_path, "events:\n  - at: 1\n    action: node_down\n  - {action: node_up}\n")
    assert problems(path) == [
        (str(path), 2, "events[0]: node_down needs a node"),
        (str(path), 4, "events[1]: node_up needs a node"),
    ]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("router:\n  policy: rund_robin\n", 2,
         "router.policy: 'rund_robin' is not one of: round_robin, random, least_loaded, session_affinity, "
         "cache_aware, load_prefix, dynamo, sglang_cache_aware, predicted_latency, llm_d_pd, dynamo_disagg, mooncake; did you mean 'round_robin'?"),
        ("model: llama-3.1-8\n", 1, "did you mean 'llama-3.1-8b'?"),
        ("cluster:\n  hardware: h100-80\n", 2, "did you mean 'h100-80gb'?"),
        ("cluster:\n  hardware: h100\n", 2, "did you mean 'h100-80gb'?"),  # not the closer 'h200'
        ("cluster:\n  nodes:\n    - hardware: a100\n", 3, "cluster.nodes[0].hardware: 'a100' is not one of"),
    ],
)
def test_registry_names(tmp_path, text, line, message):
    _, got_line, got = one_problem(write(tmp_path, text))
    assert got_line == line
    assert message in got


def test_missing_trace_names_the_trace_path(tmp_path):
    path = write(tmp_path, "workload:\n  trace:\n    format: azure\n    path: traces/missing.csv\n")
    _, line, message = one_problem(path)
    assert line == 4
    assert "workload.trace.path" in message and "traces/missing.csv" in message
    assert str(tmp_path / "traces" / "missing.csv") in message


def test_dist_sanity(tmp_path):
    path = write(tmp_path, """\
        workload:
          groups:
            - turns:
                dist: uniform
                low: 4
                high: 2
              output_tokens: {dist: normal, mean: 100, std: 10, min: 50, max: 20}
        """)
    assert problems(path) == [
        (str(path), 6, "workload.groups[0].turns: uniform needs high >= low, got low=4 high=2"),
        (str(path), 7, "workload.groups[0].output_tokens: needs min <= max, got min=50 max=20"),
    ]


def test_weights_that_do_not_fit_name_the_node(tmp_path):
    path = write(tmp_path, """\
        model: llama-3.1-70b
        cluster:
          hardware: l4
          nodes:
            - {name: small}
            - {name: sized, kv_blocks: 100}
        """)
    (_, line, message), (_, line2, message2) = problems(path)
    assert line == 5
    assert message.startswith("cluster.nodes[0] ('small'): the llama-3.1-70b weights")
    assert "do not fit in l4" in message
    # a forced kv_blocks no longer hides that the weights do not fit
    assert line2 == 6
    assert message2.startswith("cluster.nodes[1] ('sized'): kv_blocks 100 do not fit in l4: per GPU, weights 141.2 GB")


def test_70b_on_one_h100_is_an_error_with_the_numbers_and_tp4_validates(tmp_path):
    one = write(tmp_path, "model: llama-3.1-70b\ncluster:\n  nodes:\n    - {name: a, kv_blocks: 1000}\n")
    _, line, message = one_problem(one)
    assert line == 4
    assert "kv_blocks 1000 do not fit in h100-80gb: per GPU, weights 141.2 GB" in message
    assert "> 76.5 GB (gpu_memory_utilization 0.9 of 85.0 GB)" in message  # 79.18 GiB usable
    four = write(tmp_path, "model: llama-3.1-70b\ncluster:\n  tensor_parallel: 4\n", "tp4.yaml")
    s = load_scenario(four)
    assert s.cluster.tensor_parallel == 4 and s.cluster.nodes[0].tensor_parallel is None


def test_tensor_parallel_must_divide_the_heads(tmp_path):
    path = write(tmp_path, "model: qwen2.5-7b\ncluster:\n  nodes:\n    - {name: a, tensor_parallel: 8}\n")
    _, line, message = one_problem(path)
    assert line == 4
    assert "tensor_parallel 8 does not fit qwen2.5-7b: its 28 attention heads do not divide over 8 GPUs" in message


def test_user_profiles_add_names_and_are_used(tmp_path):
    path = write(tmp_path, """\
        hardware:
          l40s:
            memory_gb: 48
            bf16_tflops: 362
            hbm_tb_s: 0.864
            interconnect: PCIe Gen4 x16
            interconnect_gb_s: 32
            source: NVIDIA L40S data sheet
        models:
          tiny:
            params_b: 1.0
            layers: 16
            hidden: 2048
            intermediate: 8192
            attention_heads: 32
            kv_heads: 8
        model: tiny
        cluster:
          hardware: l40s
          kv_cache_dtype: fp8
          nodes:
            - {name: a, tensor_parallel: 2}
        """)
    s = load_scenario(path)
    assert s.hardware["l40s"].memory_gb == 48 and s.models["tiny"].head_dim is None
    from kvtui.scenario.plan import node_plans
    from kvtui.sim.deployment import build_latency

    plan = node_plans(s)[0]
    assert plan.kv_blocks > 0
    assert build_latency(s, plan).tp == 2
    over = load_scenario(path, ["hardware.l40s.memory_gb=24", "models.tiny.layers=8"])
    assert (over.hardware["l40s"].memory_gb, over.models["tiny"].layers) == (24, 8)


def test_a_bad_user_profile_is_reported_with_its_lines(tmp_path):
    path = write(tmp_path, """\
        hardware:
          mygpu:
            memory_gb: -1
            bf16_tflops: 100
            hbm_tb_s: 1
        models:
          mine:
            params_b: 7
            layer: 32
        model: mine
        cluster:
          hardware: mygpuu
        """)
    assert problems(path) == [
        (str(path), 3, "hardware.mygpu.memory_gb: must be between 0.1 and 100000, got -1"),
        (str(path), 8, "models.mine: missing required keys 'layers', 'hidden', 'intermediate', 'attention_heads', 'kv_heads'"),
        (str(path), 9, "unknown key 'layer' in models.mine; did you mean 'layers'?"),
        (str(path), 12, "cluster.hardware: 'mygpuu' is not one of: a100-80gb, h100-80gb, h200, l4"),
    ]  # (`model: mine` names a profile that failed to build: not reported twice)


def test_every_shipped_profile_key_can_be_set_in_a_scenario():
    """A scenario's `hardware:` / `models:` take every key the shipped files use (issue 18:
    usable_memory_gib, allreduce_launch_us, eager_layer_floor_us could not be set)."""
    from kvtui.profiles import _read_data
    from kvtui.scenario.model import HardwareProfile, ModelProfile

    for filename, profile in (("hardware.yaml", HardwareProfile), ("models.yaml", ModelProfile)):
        settable = {f.name for f in dataclasses.fields(profile)}
        for name, figures in _read_data(filename).items():
            assert set(figures) <= settable, f"{filename} {name}: {sorted(set(figures) - settable)}"


GPU = """\
    hardware:
      gpu:
        memory_gb: 80
        bf16_tflops: 989
        hbm_tb_s: 3.35
        interconnect_gb_s: 450
        interconnect_latency_us: 1.0
    cluster:
      hardware: gpu
      nodes:
        - {name: a, tensor_parallel: 4}
    """


def _hardware_and_blocks(path, sets=()):
    from kvtui.scenario.plan import node_plans

    plan = node_plans(load_scenario(path, list(sets)))[0]
    return plan.hardware, plan.kv_blocks


def test_user_hardware_sets_the_tensor_parallel_floor_and_usable_memory(tmp_path):
    """The three figures reach the latency model and the memory fit, from YAML and from --set."""
    extra = "    allreduce_launch_us: 12\n    eager_layer_floor_us: 1425\n    usable_memory_gib: 79.18\n"
    plain = write(tmp_path, GPU)
    tuned = tmp_path / "tuned.yaml"
    tuned.write_text(textwrap.dedent(GPU).replace("  interconnect_latency_us: 1.0\n", "  interconnect_latency_us: 1.0\n" + extra))
    hw0, blocks0 = _hardware_and_blocks(plain)
    hw, blocks = _hardware_and_blocks(tuned)
    assert (hw0.allreduce_launch_s, hw0.eager_layer_floor_s, hw0.usable_memory_bytes) == (0.0, 0.0, 0.0)
    assert hw.allreduce_launch_s == pytest.approx(12e-6) and hw.eager_layer_floor_s == pytest.approx(1425e-6)
    assert hw.usable_memory_bytes == pytest.approx(79.18 * 2**30)
    assert blocks > blocks0  # 79.18 GiB is more than 80 GB (74.5 GiB)
    profile = load_scenario(tuned).hardware["gpu"]
    from kvtui.profiles import shipped_hardware

    h100 = shipped_hardware()["h100-80gb"]
    assert (hw.allreduce_launch_s, hw.eager_layer_floor_s, hw.usable_memory_bytes) == (
        h100.allreduce_launch_s, h100.eager_layer_floor_s, h100.usable_memory_bytes)
    assert profile.usable_memory_gib == 79.18
    over, _ = _hardware_and_blocks(plain, ["hardware.gpu.allreduce_launch_us=20", "hardware.gpu.usable_memory_gib=40"])
    assert over.allreduce_launch_s == pytest.approx(20e-6) and over.usable_memory_bytes == pytest.approx(40 * 2**30)


def test_a_user_model_sets_its_measured_activation_peak(tmp_path):
    path = write(tmp_path, """\
        models:
          mine: {params_b: 8, layers: 32, hidden: 4096, intermediate: 14336, attention_heads: 32, kv_heads: 8,
                 activation_peak_gib: 4.76, activation_peak_tokens: 8192}
        model: mine
        """)
    from kvtui.profiles import shipped_models
    from kvtui.scenario.serving import profile_catalog

    mine = profile_catalog(load_scenario(path))[1]["mine"]
    assert mine.activation_extra_bytes == pytest.approx(shipped_models()["llama-3.1-8b"].activation_extra_bytes)
    assert mine.activation_extra_bytes > 0


def test_bad_tensor_parallel_floor_and_memory_figures_are_reported_with_their_lines(tmp_path):
    path = write(tmp_path, """\
        hardware:
          gpu:
            memory_gb: 80
            bf16_tflops: 989
            hbm_tb_s: 3.35
            allreduce_launch_us: -1
            eager_layer_floor_us: fast
            usable_memory_gib: 0
        models:
          mine: {params_b: 8, layers: 32, hidden: 4096, intermediate: 14336, attention_heads: 32, kv_heads: 8,
                 activation_peak_gib: -2}
        """)
    assert problems(path) == [
        (str(path), 6, "hardware.gpu.allreduce_launch_us: must be between 0 and 1000000000, got -1"),
        (str(path), 7, "hardware.gpu.eager_layer_floor_us: expected a number, got 'fast'"),
        (str(path), 8, "hardware.gpu.usable_memory_gib: must be between 0.01 and 100000, got 0"),
        (str(path), 11, "models.mine.activation_peak_gib: must be between 0.001 and 100000, got -2"),
    ]


def test_profile_name_choices_include_the_scenarios_own(tmp_path):
    path = write(tmp_path, "hardware:\n  l40s: {memory_gb: 48, bf16_tflops: 362, hbm_tb_s: 0.864}\ncluster:\n  hardware: l40\n")
    assert one_problem(path)[1:] == (
        4, "cluster.hardware: 'l40' is not one of: a100-80gb, h100-80gb, h200, l4, l40s; did you mean 'l40s'?"
    )


def test_a_cluster_needs_nodes(tmp_path):
    assert one_problem(write(tmp_path, "cluster:\n  nodes: []\n"))[1:] == (
        2, "cluster.nodes: a cluster needs at least one node"
    )


# ---------------------------------------------------------------------------------------------
# Every problem at once


def test_all_problems_are_collected_in_file_order(tmp_path):
    path = write(tmp_path, """\
        seed: -1
        cluster:
          block_size: abc
          nodes:
            - name: a
              kv_block: 10
        router:
          policy: nope
        events:
          - {action: node_down}
        """)
    found = problems(path)
    assert [line for _, line, _ in found] == [1, 3, 6, 8, 10]
    assert all(file == str(path) for file, _, _ in found)
    rendered = str(InputError(found))
    assert rendered.splitlines()[0] == f"{path}:1: seed: must be between 0 and 9223372036854775807, got -1"


# ---------------------------------------------------------------------------------------------
# --set overrides


def test_overrides_set_values(tmp_path):
    path = write(tmp_path, GOOD)
    s = load_scenario(path, [
        "cluster.nodes.0.kv_blocks=64",
        "router.policy=least_loaded",
        "workload.arrival.schedule=[{at: 0, rate: 2}]",
        "seed=11",
    ])
    assert s.cluster.nodes[0].kv_blocks == 64
    assert s.router.policy == "least_loaded"
    assert s.workload.arrival.schedule == (RatePoint(0.0, 2.0),)
    assert s.seed == 11


def test_overrides_create_absent_keys_from_the_defaults(tmp_path):
    path = write(tmp_path, "name: x\n")
    s = load_scenario(path, [
        "cluster.nodes.0.kv_blocks=64",          # the default node
        "workload.groups.0.turns.max=8",         # keeps the default turns value of 1
        "workload.duration_s=30",
        "metadata.fsync=never",
    ])
    assert s.cluster.nodes == (NodeSpec(kv_blocks=64),)
    assert s.workload.groups[0].turns == Dist(dist="fixed", value=1.0, max=8.0)
    assert s.workload.duration_s == 30.0
    assert s.metadata.fsync == "never"


def test_override_into_a_dist_shorthand_expands_it(tmp_path):
    path = write(tmp_path, "workload:\n  groups:\n    - question_tokens: 64\n")
    s = load_scenario(path, ["workload.groups.0.question_tokens.max=32"])
    assert s.workload.groups[0].question_tokens == Dist(dist="fixed", value=64.0, max=32.0)


def test_override_changes_only_the_aliased_place_it_names(tmp_path):
    path = write(tmp_path, "cluster:\n  nodes:\n    - &n {name: a, kv_blocks: 8}\n    - *n\n")
    a, b = load_scenario(path, ["cluster.nodes.1.name=b", "cluster.nodes.1.kv_blocks=9"]).cluster.nodes
    assert (a.name, a.kv_blocks, b.name, b.kv_blocks) == ("a", 8, "b", 9)


def test_trace_path_from_an_override_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "t.jsonl").write_text("{}\n")
    (tmp_path / "scenarios").mkdir()
    path = write(tmp_path / "scenarios", "name: x\n")
    monkeypatch.chdir(tmp_path)
    trace = load_scenario(path, ["workload.trace.path=t.jsonl"]).workload.trace
    assert trace.path == str(tmp_path / "t.jsonl")


def test_empty_override_value_means_null(tmp_path):
    path = write(tmp_path, "until_s: 10\n")
    assert load_scenario(path, ["until_s="]).until_s is None


@pytest.mark.parametrize(
    "override, source, message",
    [
        ("cluster.nodes.9.kv_blocks=1", "--set cluster.nodes.9.kv_blocks",
         "index 9 out of range: cluster.nodes has 1 item"),
        ("cluster.nodes.0.kv_block=1", "--set cluster.nodes.0.kv_block",
         "unknown key 'kv_block' in cluster.nodes[0]; did you mean 'kv_blocks'?"),
        ("clustr.block_size=8", "--set clustr.block_size",
         "unknown key 'clustr' at the top level; did you mean 'cluster'?"),
        ("seed", "--set seed", "expected dotted.key=value, got 'seed'"),
        ("cluster..block_size=8", "--set cluster..block_size",
         "bad path 'cluster..block_size': expected dotted keys like cluster.nodes.0.kv_blocks"),
        ("seed.x=1", "--set seed.x", "seed is an integer; it has no key 'x'"),
        ("cluster.nodes.first.kv_blocks=1", "--set cluster.nodes.first.kv_blocks",
         "cluster.nodes is a list: expected an item number after it, got 'first'"),
        ("cluster.block_size=abc", "--set cluster.block_size",
         "cluster.block_size: expected an integer, got 'abc'"),
        ("router.policy=nope", "--set router.policy",
         "router.policy: 'nope' is not one of: round_robin, random, least_loaded, session_affinity, cache_aware"),
        ("cluster.nodes=[", "--set cluster.nodes", "cannot parse the value '[' as YAML"),
    ],
)
def test_override_errors_name_the_override(tmp_path, override, source, message):
    path = write(tmp_path, "cluster:\n  nodes:\n    - name: a\n")
    file, line, got = one_problem(path, [override])
    assert (file, line) == (source, None)
    assert got.startswith(message), got


def test_override_problems_come_with_the_file_problems(tmp_path):
    path = write(tmp_path, "seed: -1\n")
    found = problems(path, ["cluster.block_size=0", "nope=1"])
    assert [(file, line) for file, line, _ in found] == [
        (str(path), 1), ("--set cluster.block_size", None), ("--set nope", None),
    ]


def test_override_can_fix_a_bad_file_value(tmp_path):
    path = write(tmp_path, "seed: -1\n")
    assert load_scenario(path, ["seed=3"]).seed == 3


# ---------------------------------------------------------------------------------------------
# JSON Schema


def _all_dataclasses(cls=Scenario, seen=None) -> dict[str, type]:
    seen = {} if seen is None else seen
    seen[cls.__name__] = cls
    for _, hint in field_types(cls).values():
        inner, _ = split_optional(hint)
        inner = tuple_item(inner) or mapping_item(inner) or inner
        if is_dataclass_type(inner) and inner.__name__ not in seen:
            _all_dataclasses(inner, seen)
    return seen


def test_schema_is_json_and_draft_2020_12():
    schema = scenario_json_schema()
    assert json.loads(json.dumps(schema)) == schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object" and schema["additionalProperties"] is False


def test_schema_has_every_dataclass_and_field():
    schema = scenario_json_schema()
    classes = _all_dataclasses()
    assert set(schema["$defs"]) == set(classes) - {"Scenario"}
    for name, cls in classes.items():
        obj = schema if name == "Scenario" else schema["$defs"][name]
        assert obj["additionalProperties"] is False
        assert list(obj["properties"]) == [f.name for f in dataclasses.fields(cls)]
        for field in dataclasses.fields(cls):
            assert obj["properties"][field.name]["description"] == field.metadata["doc"]


def test_schema_details():
    schema = scenario_json_schema()
    defs = schema["$defs"]
    block_size = defs["Cluster"]["properties"]["block_size"]
    assert (block_size["type"], block_size["minimum"], block_size["maximum"]) == ("integer", 1, 4096)
    assert defs["Latency"]["properties"]["model"]["enum"] == ["linear", "roofline"]
    turns = defs["PrefixGroup"]["properties"]["turns"]
    assert {"type": "number", "minimum": 0, "maximum": 1e9} in turns["anyOf"]
    assert {"$ref": "#/$defs/Dist"} in turns["anyOf"]
    kv_blocks = defs["NodeSpec"]["properties"]["kv_blocks"]
    assert kv_blocks["anyOf"] == [{"type": "integer", "minimum": 1, "maximum": 100_000_000}, {"type": "null"}]
    assert defs["Workload"]["properties"]["groups"]["type"] == "array"
    assert "round_robin" in defs["Router"]["properties"]["policy"]["enum"]
    assert schema["properties"]["cluster"]["$ref"] == "#/$defs/Cluster"


def test_a_non_empty_metadata_dir_is_refused_unless_resumed(tmp_path, monkeypatch):
    """A second run on the same `metadata.dir` would recover the first run's log and change
    the figures: refused at the key's line, allowed with `metadata.resume: true`."""
    monkeypatch.chdir(tmp_path)
    text = GOOD.replace("  snapshot_every: 100\n", "  snapshot_every: 100\n  dir: wal\n")
    path = write(tmp_path, text)
    load_scenario(path, [])  # absent: a new directory
    (tmp_path / "wal").mkdir()
    load_scenario(path, [])  # empty
    (tmp_path / "wal" / "CURRENT").write_text("x")
    file, line, message = one_problem(path)
    assert (file, line) == (str(path), text.splitlines().index("  dir: wal") + 1)
    assert "metadata.dir: 'wal' is not empty" in message and "metadata.resume: true" in message
    assert load_scenario(path, ["metadata.resume=true"]).metadata.resume


def test_a_run_that_cannot_advance_or_import_is_refused_at_its_line(tmp_path, without_xgboost):
    """issue 20: an SGLang eviction interval that never moves the clock, and xgboost asked for
    where it is not installed, are input problems at their lines, not a hang or a traceback."""
    path = write(tmp_path, """\
        name: x
        router:
          policy: sglang_cache_aware
          sglang: {eviction_interval_s: 1e-300}
          predicted_latency: {regressor: xgboost}
        workload: {requests: 3}
        """)
    with pytest.raises(InputError) as e:
        load_scenario(path)
    text = str(e.value)
    assert f"{path}:4: router.sglang.eviction_interval_s: must be 0 (never) or at least 0.001 s" in text
    assert f"{path}:5: router.predicted_latency.regressor: xgboost needs the xgboost package" in text
    without_xgboost()  # undone: xgboost is back
    assert load_scenario(path, ["router.sglang.eviction_interval_s=0", "router.predicted_latency.regressor=linear"])
