"""A request as the engine tracks it: what the workload asked for, and how far it has got."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Request:
    """One LLM call.

    The workload fills the first block of fields. `block_keys` are the chained keys of every
    full block of the request's whole sequence (prompt then output), so the node can key the
    blocks it fills during decode too; a multi-turn session's next prompt starts with this
    sequence, so its keys start with these.
    """

    id: str
    session: str
    group: str
    turn: int
    prompt_tokens: int
    output_tokens: int
    block_keys: tuple[int, ...]
    arrival: float = 0.0

    # --- engine state -------------------------------------------------------------------
    node: str | None = None
    computed: int = 0  # tokens whose KV exists (prefilled or decoded)
    generated: int = 0  # output tokens produced
    blocks: list[int] = field(default_factory=list)  # block ids held, in sequence order
    cached_tokens: int = 0  # prompt tokens served from cache at first scheduling
    hit_blocks: int = 0
    first_token_at: float | None = None
    finished_at: float | None = None
    preemptions: int = 0
    reroutes: int = 0
    admitted_seq: int = 0  # order of (re)admission to the running batch; newest preempted first
    outcome: str | None = None  # completed | rejected | failed

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def prefill_done(self) -> bool:
        return self.computed >= self.prompt_tokens

    def reset_progress(self) -> None:
        """Back to the start (recompute preemption, or re-routing after a node failure)."""
        self.computed = 0
        self.generated = 0
        self.blocks = []
