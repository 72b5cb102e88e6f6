"""What `kvtui plot` draws: one series per value of `--by` (and of any other key that varies and
is neither x nor by, so nothing is averaged silently), one point per x value, y the mean over
seeds with its 95 % interval. Only runs with status ok are plotted."""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.sweep.fields import resolve
from kvtui.sweep.stats import Estimate, estimate


@dataclass
class Series:
    name: str
    points: list[tuple[float, Estimate]]  # (x position, y), in x order


@dataclass
class Plot:
    x_name: str
    y_name: str
    x_labels: list[tuple[float, str]]  # tick position -> text (categorical x: 0, 1, 2, ...)
    series: list[Series]


def _number(v) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _other_keys(lines: list[dict], used: set[str]) -> list[str]:
    """Grid keys, scenario and policy that vary across the lines and are not plotted already."""
    keys = []
    for name in ("scenario", *dict.fromkeys(k for line in lines for k in line["run"]["grid"]), "policy"):
        if name in used or (name in ("router.policy", "policy") and used & {"router.policy", "policy"}):
            continue
        _, get = resolve(name, lines, "key")
        if len({str(get(line)) for line in lines}) > 1:
            keys.append(name)
    return keys


def build(lines: list[dict], x: str, y: str, by: str | None) -> Plot:
    ok = [line for line in lines if line["status"] == "ok"]
    if not ok:
        raise ValueError("no successful runs to plot")
    x_name, get_x = resolve(x, ok, "--x")
    y_name, get_y = resolve(y, ok, "--y")
    by_name, get_by = resolve(by, ok, "--by") if by else (None, lambda line: "")
    extra = [resolve(k, ok, "key") for k in _other_keys(ok, {x_name, by_name, x, by})]
    xs = list(dict.fromkeys(get_x(line) for line in ok))
    numeric = all(_number(v) is not None for v in xs)
    if numeric:
        xs.sort(key=_number)
        position = {v: _number(v) for v in xs}
    else:
        position = {v: float(i) for i, v in enumerate(xs)}
    groups: dict[str, dict[object, list[float]]] = {}
    for line in ok:
        parts = [str(get_by(line))] if by_name else []
        parts += [f"{name.rsplit('.', 1)[-1]}={get(line)}" for name, get in extra]
        yv = _number(get_y(line))
        if yv is not None:
            groups.setdefault(" ".join(parts) or y_name, {}).setdefault(get_x(line), []).append(yv)
    series = []
    for name, by_x in groups.items():
        pts = [(position[v], estimate(by_x[v])) for v in xs if v in by_x]
        series.append(Series(name, [(px, e) for px, e in pts if e is not None]))
    labels = [(position[v], _tick(v)) for v in xs]
    return Plot(x_name, y_name, labels, series)


def _tick(v) -> str:
    n = _number(v)
    return f"{n:g}" if n is not None else str(v)
