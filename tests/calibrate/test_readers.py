"""Each report format read from a small file written here in the tool's documented schema, and
every kind of bad input refused with `file: message` and exit 2 (never a traceback)."""

from __future__ import annotations

import json

import pytest

from kvtui.calibrate.detect import read_report
from kvtui.cli import main
from kvtui.errors import InputError

from .inference_sim import runs, write_run


def test_inference_perf_stages_are_converted_to_kvtui_measures(tmp_path):
    run = runs()["llama-2-7b-tp1-general"]
    report = read_report(str(write_run(run, tmp_path / "run")))
    assert report.format == "inference-perf" and [s.rate for s in report.stages] == [8.0, 20.0]
    s0, raw = report.stages[0], run["stages"][0]
    # two stream messages per token on these runs: TPOT doubled, ITL read at 1 - (1 - q) / 2
    assert s0.measured["tpot"]["p50"] == pytest.approx(2 * raw["time_per_output_token"]["median"])
    assert s0.measured["itl"]["p50"] == pytest.approx(raw["inter_token_latency"]["p75"])
    assert s0.measured["itl"]["p90"] == pytest.approx(raw["inter_token_latency"]["p95"])
    assert s0.measured["ttft"]["p50"] == raw["time_to_first_token"]["median"]
    assert s0.measured["e2e"]["p90"] == raw["request_latency"]["p90"]
    sp = report.shared_prefix  # the resolved config ran 10 x 10 users, single turn
    assert (sp.num_groups, sp.num_prompts_per_group, sp.multi_turn, sp.output_len) == (10, 10, False, 248)
    assert sp.system_prompt_len + sp.question_len == pytest.approx(raw["prompt_len_mean"], abs=1)
    assert report.serving.tp == 1 and report.serving.max_num_seqs == 128 and report.serving.max_num_batched_tokens == 2048
    assert report.model_figures["params_b"] == pytest.approx(6.74, abs=0.01)  # the model card's 6.74 B
    assert report.arrival == "constant"


def test_a_mixture_of_experts_config_gives_its_active_parameters(tmp_path):
    report = read_report(str(write_run(runs()["mixtral-8x7b-v0-1-tp2-general"], tmp_path / "run")))
    assert report.model_figures["params_b"] == pytest.approx(46.7, abs=0.1)  # the card: 46.7 B total
    assert report.model_figures["active_params_b"] == pytest.approx(12.9, abs=0.1)  # 12.9 B per token


def vllm_bench(rate: float, ttft_ms: float, detailed: bool) -> dict:
    """A `vllm bench serve --save-result` document (vllm/benchmarks/serve.py's keys)."""
    doc = {"date": "20260101-000000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
           "num_prompts": 4, "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "duration": 2.0,
           "completed": 4, "total_input_tokens": 400, "total_output_tokens": 40, "request_throughput": 2.0,
           "median_ttft_ms": ttft_ms, "p99_ttft_ms": ttft_ms * 1.5, "median_tpot_ms": 8.0, "median_itl_ms": 7.9,
           "median_e2el_ms": ttft_ms + 9 * 8.0}
    if detailed:
        doc.update(input_lens=[90, 100, 100, 110], output_lens=[10, 10, 10, 10],
                   ttfts=[ttft_ms / 1e3] * 3 + [2 * ttft_ms / 1e3], itls=[[0.008] * 9] * 4, errors=[""] * 4)
    return doc


def test_vllm_bench_files_are_stages_ordered_by_rate(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "r4.json").write_text(json.dumps(vllm_bench(4.0, 40.0, detailed=True)))
    (tmp_path / "b" / "r2.json").write_text(json.dumps(vllm_bench(2.0, 30.0, detailed=False)))
    report = read_report(str(tmp_path / "b"))
    assert report.format == "vllm-bench" and [s.rate for s in report.stages] == [2.0, 4.0]
    low, high = report.stages
    assert low.measured["ttft"] == {"p50": 0.030}  # no p90 asked, no per-request lists
    assert high.measured["ttft"]["p50"] == 0.040 and high.measured["ttft"]["p90"] == pytest.approx(0.068)
    assert high.requests.tpot == pytest.approx([0.008] * 4)
    assert report.prompt.mean == 100 and report.output.mean == 10
    one = read_report(str(tmp_path / "b" / "r2.json"))
    assert len(one.stages) == 1


def test_guidellm_inter_token_latency_is_kvtui_tpot(tmp_path):
    summary = lambda median, p90: {"successful": {"median": median, "mean": median, "percentiles": {"p90": p90}, "count": 50}}  # noqa: E731
    bench = lambda kind, rate, ttft: {"args": {"strategy": {"type_": kind, "rate": rate}, "model": "m"},  # noqa: E731
                                      "run_stats": {"start_time": 0.0, "end_time": 30.0},
                                      "metrics": {"time_to_first_token_ms": summary(ttft, ttft * 1.2),
                                                  "inter_token_latency_ms": summary(8.0, 9.0),
                                                  "time_per_output_token_ms": summary(9.0, 10.0),
                                                  "request_latency": summary(1.0, 1.1),
                                                  "prompt_token_count": {"successful": {"mean": 500, "std_dev": 50, "min": 400, "max": 600}},
                                                  "output_token_count": {"successful": {"mean": 120, "std_dev": 0}}}}
    f = tmp_path / "g.json"
    slow = bench("constant", 3.0, 30.0)
    slow["requests"] = {"successful": [{"start_time": t, "first_token_time": t + 0.03, "end_time": t + 0.03 + 119 * 0.008,
                                        "prompt_tokens": 500, "output_tokens": 120} for t in (0.0, 0.4, 0.7)]}
    f.write_text(json.dumps({"benchmarks": [bench("constant", 6.0, 40.0), slow]}))
    report = read_report(str(f))
    assert report.format == "guidellm" and [s.rate for s in report.stages] == [3.0, 6.0]
    assert report.stages[0].measured["tpot"] == pytest.approx({"p50": 0.008, "p90": 0.009})
    assert "itl" not in report.stages[0].measured and report.stages[1].measured["e2e"]["p50"] == 1.0
    assert report.prompt.mean == 500 and report.output.std == 0
    assert report.stages[0].requests.tpot == pytest.approx([0.008] * 3) and report.stages[1].requests is None


BAD = {
    "truncated.json": ('{"median_ttft_ms": 12.0, "request_thro', "truncated.json:1: not JSON"),
    "foreign.json": ('{"hello": "world"}', "foreign.json: not a report kvtui reads"),
    "empty-stage.json": (json.dumps({**vllm_bench(2.0, 30.0, False), "completed": 0}), "no completed request"),
    "units.json": (json.dumps({**vllm_bench(2.0, 30.0, True), "ttfts": [30.0] * 4}), "units that cannot be right"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_reports_exit_2_with_the_file_and_why(tmp_path, capsys, name):
    text, expected = BAD[name]
    (tmp_path / name).write_text(text)
    assert main(["calibrate", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_an_inference_perf_directory_without_stages_or_with_wrong_units_is_refused(tmp_path):
    run = runs()["llama-2-7b-tp1-codegen"]
    d = write_run(run, tmp_path / "run")
    for f in (d / "results").glob("stage_*"):
        f.unlink()
    with pytest.raises(InputError, match="not a report"):
        read_report(str(d))
    ms = {**run, "stages": [{**s, "time_to_first_token": {k: v * 1e5 for k, v in s["time_to_first_token"].items()}}
                            for s in run["stages"]]}
    with pytest.raises(InputError, match="units that cannot be right"):
        read_report(str(write_run(ms, tmp_path / "ms")))
