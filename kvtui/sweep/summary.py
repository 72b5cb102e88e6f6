"""The sweep's summary: one row per cell (scenario, --set, grid values, policy) over its seeds,
each metric as mean and 95 % Student-t confidence half-width (kvtui.sweep.stats)."""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.sweep.fields import resolve
from kvtui.sweep.grid import key_text
from kvtui.sweep.stats import Estimate, estimate

DEFAULT_METRICS = (
    "latency_ms.ttft.p95",
    "latency_ms.e2e.p95",
    "cache.token_hit_rate",
    "throughput.output_tokens_per_s",
    "requests.success_rate",
)


@dataclass
class Cell:
    label: dict[str, str]  # column -> text: scenario (when several), grid values, policy
    runs: int
    failed: int
    metrics: dict[str, Estimate | None]
    error: str | None  # the first failure's message, for the table


def _cell_key(run: dict) -> str:
    return key_text({k: v for k, v in run.items() if k != "seed"})


def summarise(lines: list[dict], metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS) -> tuple[list[str], list[Cell]]:
    """(the resolved metric names, the cells in grid order)."""
    ok = [line for line in lines if line["status"] == "ok"]
    getters = [resolve(m, ok, "metric") for m in metrics] if ok else []
    groups: dict[str, list[dict]] = {}
    for line in lines:
        groups.setdefault(_cell_key(line["run"]), []).append(line)
    several = len({line["run"]["scenario"] for line in lines}) > 1
    cells = []
    for members in groups.values():
        run = members[0]["run"]
        label = {"scenario": run["scenario"]} if several else {}
        label.update({k: str(v) for k, v in run["grid"].items()})
        good = [m for m in members if m["status"] == "ok"]
        policy = run["policy"] or (good[0]["result"]["policy"] if good else None)
        if policy is not None and (run["policy"] is not None or "router.policy" not in run["grid"]):
            label["policy"] = policy
        values = {name: estimate([get(m) for m in good if isinstance(get(m), (int, float))]) for name, get in getters}
        bad = [m for m in members if m["status"] != "ok"]
        cells.append(Cell(label, len(members), len(bad), values, bad[0]["error"] if bad else None))
    return [name for name, _ in getters], cells
