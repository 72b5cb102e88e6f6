"""The physical knobs `kvtui calibrate` fits, their bounds, and where each sits in a hardware
profile (the keys of hardware.yaml, so the fitted values are a profile scenarios load as is).

Only knobs with a physical meaning, each bounded to what hardware and serving stacks can do:
the achieved shares of the data sheet's FLOP/s and HBM bandwidth (kernels reach 20-80 %), the
fixed CPU cost of a scheduler step (tens of microseconds to a few milliseconds: scheduling,
sampling, detokenising, streaming) and of a request before it is scheduled (HTTP, tokenising),
and with tensor parallelism the fixed cost of one all-reduce call (microseconds to a few
hundred), and the steps a token takes to reach the client (the API server's output processing,
pipelined with the next step). KV capacity is taken from the report (vLLM's `num_gpu_blocks`)
when it gives it, never fitted: it is a count, not a rate.

Priors (fit.py): the profile's value, except the HBM efficiency, centred on 0.85 with a tight
spread (long streaming reads reach 80-90 % of the data sheet; the shipped 0.66 was fitted beside a
0.5 ms step overhead that two-stage fits of the Llama-2-7b runs put at 1.1-1.4 ms), the request
overhead on 2.5 ms (HTTP and tokenising a few hundred tokens) and the output lag on one step.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.profiles import GiB, Hardware


@dataclass(frozen=True)
class Knob:
    name: str  # the hardware.yaml key it is written under
    low: float
    high: float
    unit: str
    what: str
    offset: float = 0.0  # fitted as log(value + offset): a cost that may be 0 still moves by a share of its scale
    spread: float = 1.0  # how far (in log units) the value may plausibly sit from the prior's centre
    prior: float | None = None  # the prior's centre; None: the profile's value

    def of(self, hw: Hardware) -> float:
        """The knob's value in a hardware profile, in the knob's unit."""
        return {
            "compute_efficiency": hw.compute_efficiency,
            "memory_efficiency": hw.memory_efficiency,
            "iteration_overhead_us": hw.iteration_overhead_s * 1e6,
            "request_overhead_ms": hw.request_overhead_s * 1e3,
            "allreduce_launch_us": hw.allreduce_launch_s * 1e6,
            "output_lag_steps": hw.output_lag_steps,
        }[self.name]


KNOBS = (
    Knob("compute_efficiency", 0.05, 1.0, "", "share of peak FLOP/s the kernels reach", spread=0.3),
    Knob("memory_efficiency", 0.1, 1.0, "", "share of HBM bandwidth the kernels reach", spread=0.05, prior=0.85),
    Knob("iteration_overhead_us", 0.0, 20_000.0, "us", "fixed CPU cost per scheduler step", 200.0),
    Knob("request_overhead_ms", 0.0, 500.0, "ms", "API server cost per request before scheduling", 2.0, prior=2.5),
    Knob("output_lag_steps", 0.0, 5.0, "", "steps a token takes to reach the client", 0.5, prior=1.0),
)
TP_KNOBS = (Knob("allreduce_launch_us", 0.0, 500.0, "us", "fixed cost of one all-reduce call", 5.0),)


def knobs_for(tp: int) -> tuple[Knob, ...]:
    return KNOBS + (TP_KNOBS if tp > 1 else ())


def hardware_figures(hw: Hardware) -> dict:
    """A Hardware back as the figures of hardware.yaml (the keys a scenario's `hardware:` takes)."""
    figures = {
        "memory_gb": hw.memory_bytes / 1e9, "bf16_tflops": hw.peak_flops / 1e12, "hbm_tb_s": hw.hbm_bytes_per_s / 1e12,
        "interconnect": hw.interconnect, "interconnect_gb_s": hw.link_bytes_per_s / 1e9,
        "interconnect_latency_us": hw.link_latency_s * 1e6, "allreduce_launch_us": hw.allreduce_launch_s * 1e6,
        "eager_layer_floor_us": hw.eager_layer_floor_s * 1e6, "rdma_gb_s": hw.rdma_bytes_per_s / 1e9,
        "rdma_latency_us": hw.rdma_latency_s * 1e6, "compute_efficiency": hw.compute_efficiency,
        "memory_efficiency": hw.memory_efficiency, "iteration_overhead_us": hw.iteration_overhead_s * 1e6,
        "request_overhead_ms": hw.request_overhead_s * 1e3, "output_lag_steps": hw.output_lag_steps, "source": f"the {hw.name} profile's",
    }
    if hw.usable_memory_bytes:
        figures["usable_memory_gib"] = hw.usable_memory_bytes / GiB
    return {k: (round(v, 9) if isinstance(v, float) else v) for k, v in figures.items()}
