"""A request as the engine tracks it: what the workload asked for, and how far it has got."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvtui.sim import loop

# `Request.decode_node` of a request whose decode node is picked when its prefill ends (Dynamo's
# order, kvtui/sim/router/dynamo_disagg.py); the handoff asks the router then (kvtui/sim/handoff.py).
DECODE_AT_PREFILL_END = "(decode node picked when the prefill ends)"


@dataclass(slots=True, eq=False, init=False)
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
    slo_ttft_s: float | None = None  # time-to-first-token objective, seconds (None: none)
    slo_tpot_s: float | None = None  # time-per-output-token objective, seconds (None: none)
    sheddable: bool = False  # may be rejected instead of queued when no node can meet its SLO

    # --- engine state -------------------------------------------------------------------
    node: str | None = None
    target: int = 0  # tokens to prefill at the current admission (prompt + generated so far)
    computed: int = 0  # tokens whose KV exists (prefilled or decoded)
    generated: int = 0  # output tokens produced
    blocks: list[int] = field(default_factory=list)  # block ids held, in sequence order
    cached_tokens: int = 0  # prompt tokens served from cache at first scheduling
    loaded_tokens: int = 0  # of those, tokens loaded from the node's CPU tier
    hit_blocks: int = 0
    first_token_at: float | None = None
    finished_at: float | None = None
    preemptions: int = 0
    done: loop.Event | None = None  # the loop event the workload waits on; the engine succeeds it
    decode_node: str | None = None  # disaggregated: where it decodes, when another node prefills it (DECODE_AT_PREFILL_END: not chosen yet)

    def __init__(
        self, id: str, session: str, group: str, turn: int, prompt_tokens: int, output_tokens: int,
        block_keys: tuple[int, ...], arrival: float = 0.0, slo_ttft_s: float | None = None,
        slo_tpot_s: float | None = None, sheddable: bool = False, node: str | None = None, target: int = 0,
        computed: int = 0, generated: int = 0, blocks: list[int] | None = None, cached_tokens: int = 0,
        loaded_tokens: int = 0, hit_blocks: int = 0, first_token_at: float | None = None,
        finished_at: float | None = None, preemptions: int = 0, done: loop.Event | None = None,
        decode_node: str | None = None,
    ) -> None:
        """Written out, not generated: under mypyc a dataclass's generated `__init__` stays an
        interpreted function (see NodeState), and the workload makes one Request per request."""
        self.id, self.session, self.group, self.turn = id, session, group, turn
        self.prompt_tokens, self.output_tokens, self.block_keys, self.arrival = prompt_tokens, output_tokens, block_keys, arrival
        self.slo_ttft_s, self.slo_tpot_s, self.sheddable = slo_ttft_s, slo_tpot_s, sheddable
        self.node, self.target, self.computed, self.generated = node, target, computed, generated
        self.blocks = [] if blocks is None else blocks
        self.cached_tokens, self.loaded_tokens, self.hit_blocks = cached_tokens, loaded_tokens, hit_blocks
        self.first_token_at, self.finished_at, self.preemptions = first_token_at, finished_at, preemptions
        self.done, self.decode_node = done, decode_node

    def restart(self) -> None:
        """Back to the very start: its node failed and the request is sent again elsewhere."""
        self.node = None
        self.decode_node = None
        self.target = 0
        self.computed = 0
        self.generated = 0
        self.blocks = []
        self.first_token_at = None
        self.cached_tokens = 0
        self.loaded_tokens = 0
        self.hit_blocks = 0
