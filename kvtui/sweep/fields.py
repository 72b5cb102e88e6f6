"""Names the user writes (`--x rate`, `--y ttft.p95`, `--by policy`) resolved against sweep lines.

A name is, in this order: `policy` (the policy that ran, from the result document, so a grid
over `router.policy` plots the same as `--policies`), `scenario` or `seed` (the run key's); a
grid key, exactly or by a unique dotted suffix (`rate` for `workload.arrival.rate`); else a path
into the result document, exactly or by a unique dotted suffix (`ttft.p95` for
`latency_ms.ttft.p95`). Ambiguous or unknown names are errors that list the candidates.
"""

from __future__ import annotations

from collections.abc import Callable

Getter = Callable[[dict], object]


class FieldError(ValueError):
    """A name that matches nothing, or more than one thing."""


def result_paths(result: dict, prefix: str = "") -> list[str]:
    """Every scalar leaf of a result document as a dotted path (lists are not plottable)."""
    paths: list[str] = []
    for k, v in result.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            paths.extend(result_paths(v, path + "."))
        elif not isinstance(v, list):
            paths.append(path)
    return paths


def _by_suffix(name: str, candidates: list[str]) -> list[str]:
    if name in candidates:
        return [name]
    return [c for c in candidates if c.endswith("." + name)]


def _dig(doc: dict, path: str):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _policy(line: dict):
    return (line.get("result") or {}).get("policy") or line["run"].get("policy")


def resolve(name: str, lines: list[dict], what: str) -> tuple[str, Getter]:
    """(the full name, a function line -> value) for `name`; FieldError if none or ambiguous."""
    if name == "policy":
        return "policy", _policy
    if name in ("scenario", "seed"):
        return name, lambda line: line["run"][name]
    grid_keys = list(dict.fromkeys(k for line in lines for k in line["run"]["grid"]))
    hits = _by_suffix(name, grid_keys)
    if len(hits) == 1:
        key = hits[0]
        return key, lambda line: line["run"]["grid"].get(key)
    if len(hits) > 1:
        raise FieldError(f"{what} {name!r} is ambiguous: grid keys {', '.join(hits)}")
    paths = list(dict.fromkeys(p for line in lines if line.get("result") for p in result_paths(line["result"])))
    hits = _by_suffix(name, paths)
    if len(hits) == 1:
        path = hits[0]
        return path, lambda line: _dig(line.get("result") or {}, path)
    if len(hits) > 1:
        raise FieldError(f"{what} {name!r} is ambiguous: {', '.join(hits[:8])}")
    known = [*grid_keys, "policy", "scenario", "seed", *[p for p in paths if p.startswith(("latency_ms.", "cache.", "throughput.", "slo.", "requests."))]]
    raise FieldError(f"{what} {name!r} matches no grid key or result field; try one of: {', '.join(known[:24])}, ...")
