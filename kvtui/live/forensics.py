"""Miss forensics: every prompt block a routed request did not hit, and why.

For one request the engine reports how many prompt tokens it served from its prefix cache
(vLLM's `usage.prompt_tokens_details.cached_tokens`); every other block of the prompt missed,
and each missed block gets exactly one cause, tried in this order:

- `last token`: the prompt's blocks were all cached, but vLLM computes the last prompt token
  anyway (vLLM 0.33.0 `vllm/v1/core/kv_cache_manager.py` `get_computed_blocks`: at most
  `num_tokens - 1` tokens hit), so a prompt that is a whole number of blocks recomputes its last;
- `partial block`: the prompt's last, incomplete block (only full blocks are cached);
- `stale index`: the index said the chosen engine held it (it was within its promised prefix)
  and the engine did not hit it;
- `evicted here`: the chosen engine had held it and removed it (the batch that did is named);
- `held elsewhere`: another engine held it when the request was routed (routed away from it);
- `new`: no engine had it.

The reverse staleness (the engine hit more than the index promised) is no miss; it is counted
as `unpromised_hits`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kvtui.live.routing import Routed
from kvtui.live.state import LiveState

CAUSES = ("last token", "partial block", "stale index", "evicted here", "held elsewhere", "new")


@dataclass(frozen=True)
class Forensics:
    engine: str
    prompt_blocks: int  # ceil(prompt tokens / block size)
    promised: int  # blocks the index said the chosen engine held
    hit: int  # blocks the engine served from cache
    causes: tuple[tuple[str, int], ...]  # (cause, missed blocks), in CAUSES order, non-zero only
    unpromised_hits: int
    evicted_in: tuple[int, ...]  # seqs of the batches that evicted the `evicted here` blocks

    @property
    def missed(self) -> int:
        return self.prompt_blocks - self.hit


def attribute(routed: Routed, state: LiveState, cached_tokens: int, block_size: int) -> Forensics:
    """Every missed block of `routed`'s prompt, with its cause (see the module doc)."""
    engine, keys = routed.decision.node, routed.request.block_keys
    if engine is None:
        raise ValueError("a refused request has no forensics (it was not sent)")
    tokens = routed.request.prompt_tokens
    full, blocks = tokens // block_size, -(-tokens // block_size)
    hit = min(cached_tokens // block_size, full)
    promised = routed.promised(engine)
    others = max((s.prefix for s in routed.states if s.name != engine), default=0)
    causes: Counter[str] = Counter()
    evicted_in = []
    for i in range(hit, blocks):
        cause = _cause(i, full if tokens % block_size == 0 else -1, hit, promised, others, state, engine, keys)
        causes[cause] += 1
        if cause == "evicted here":
            evicted_in.append(state.evicted[(engine, keys[i])])
    return Forensics(engine, blocks, promised, hit, tuple((c, causes[c]) for c in CAUSES if causes[c]),
                     max(0, hit - promised), tuple(evicted_in))


def _cause(i: int, whole: int, hit: int, promised: int, others: int,
           state: LiveState, engine: str, keys) -> str:
    """`whole`: the number of blocks when the prompt is a whole number of them, else -1."""
    if i == whole - 1 and hit == whole - 1 and promised >= whole:
        return "last token"
    if i >= len(keys):
        return "partial block"
    if i < promised:
        return "stale index"
    if (engine, keys[i]) in state.evicted:
        return "evicted here"
    if i < others:
        return "held elsewhere"
    return "new"


def summary(all_forensics: list[Forensics]) -> list[str]:
    """The table printed at exit and in replay: missed blocks by cause, over every request."""
    missed = sum(f.missed for f in all_forensics)
    total: Counter[str] = Counter()
    for f in all_forensics:
        total.update(dict(f.causes))
    lines = [f"routed {len(all_forensics)} requests: prompt blocks {sum(f.prompt_blocks for f in all_forensics)}, "
             f"hit {sum(f.hit for f in all_forensics)}, missed {missed}"]
    lines += [f"  {cause:<15} {total[cause]:>7}" for cause in CAUSES if total[cause]]
    return lines
