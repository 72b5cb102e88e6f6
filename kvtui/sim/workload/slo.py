"""The SLO fields every workload puts on its requests.

A scenario writes objectives in milliseconds (`slo: {ttft_ms, tpot_ms}`, as llm-d's
`x-slo-ttft-ms` / `x-slo-tpot-ms` request headers); `Request` carries them in seconds, like
every other time in the engine.
"""

from __future__ import annotations

from kvtui.scenario.model import SLO


def slo_fields(slo: SLO | None, sheddable: bool) -> dict:
    """Keyword arguments for `Request`: `slo_ttft_s`, `slo_tpot_s`, `sheddable`."""
    ttft = slo.ttft_ms if slo is not None else None
    tpot = slo.tpot_ms if slo is not None else None
    return {
        "slo_ttft_s": None if ttft is None else ttft / 1000.0,
        "slo_tpot_s": None if tpot is None else tpot / 1000.0,
        "sheddable": bool(sheddable),
    }
