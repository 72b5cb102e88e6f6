"""The synthetic workload: multi-turn sessions in prefix groups.

A session of a group sends `turns` requests. Turn k's prompt is the group's system prompt, then
every earlier question and answer of the session, then a new question; the answer is drawn with
the request (the simulation needs only its length and, for keying decode blocks, its ids).
Shared text has shared token ids and unrelated text has fresh random ones, so the chained block
keys find exactly the reuse a real prefix cache would.

All randomness comes from the one `numpy.random.Generator` passed in, so a scenario and seed
give the same requests every time. It is split (`Generator.spawn`, deterministic) into one
stream for the arrival gaps, one per closed-loop user and one per session, in the order the
sessions start. So the draws of one session never shift another's: when a routing policy makes
a session's second turn come earlier or not at all, the sessions that start after it still get
the same group, turns and prompts, and `kvtui compare` compares policies on the same workload.
"""

from __future__ import annotations

import bisect
import math

import numpy as np
from kvtui.sim import loop

from kvtui.scenario.model import PrefixGroup, Workload
from kvtui.sim.distributions import sample, sample_int
from kvtui.sim.request import Request
from kvtui.sim.workload.arrivals import Submit, start_arrivals
from kvtui.sim.workload.slo import slo_fields
from kvtui.sim.workload.tokens import Conversation, random_tokens


SESSION_BATCH = 256  # session streams spawned at once (a stream is ~1 KB; see _next_session_rng)


class _Group:
    """A prefix group with its system prompt drawn once and hashed once."""

    __slots__ = ("spec", "prompt", "slo")

    def __init__(self, spec: PrefixGroup, block_size: int, rng: np.random.Generator):
        self.spec = spec
        self.prompt = Conversation.of(random_tokens(rng, spec.system_prompt_tokens), block_size)
        self.slo = slo_fields(spec.slo, spec.sheddable)  # the Request fields every turn carries


class SyntheticWorkload:
    """Sessions of the scenario's prefix groups, started by its arrival process.

    Stop conditions (any that is set): `sessions` started, `requests` arrived (a running session
    stops issuing turns too), `duration_s` (no session begins from then on). With none set the
    workload runs until the engine stops the clock.
    """

    def __init__(self, spec: Workload, block_size: int, rng: np.random.Generator):
        self.spec = spec
        self.block_size = block_size
        self.rng = rng
        self.groups = [_Group(g, block_size, rng) for g in spec.groups]
        self._arrival_rng, self._session_rngs = rng.spawn(2)
        self._spawned: list[np.random.Generator] = []  # session streams spawned ahead, next last
        self._by_name: dict[str, _Group] = {}
        for g in self.groups:
            self._by_name.setdefault(g.spec.name, g)
        weights = [max(g.spec.weight, 0.0) for g in self.groups]
        if sum(weights) <= 0:
            weights = [1.0] * len(self.groups)
        self._cumulative = list(np.cumsum(weights)) if weights else []
        self._cycle = [g for g in self.groups for _ in range(int(math.floor(g.spec.weight + 0.5)))] or self.groups
        self._next_in_cycle = 0
        self.sessions_started = 0
        self.turns_cut = 0  # turns never sent: an earlier turn of their session was rejected or failed
        self.requests_issued = 0
        self.env: loop.Environment  # set by start(), before any session runs
        self._submit: Submit

    # -- the engine's interface ------------------------------------------------------------
    def start(self, env: loop.Environment, submit: Submit) -> None:
        self.env = env
        self._submit = submit
        if self.groups:
            start_arrivals(env, self.spec.arrival, self._arrival_rng, self._may_start, self._start_session)

    def system_prompt_keys(self, group_name: str) -> list[int]:
        """Keys of the full blocks of a group's system prompt (what a node pins or preloads)."""
        group = self._by_name.get(group_name)
        return list(group.prompt.keys) if group is not None else []

    # -- sessions ------------------------------------------------------------------------
    def _may_start(self) -> bool:
        s = self.spec
        if s.sessions is not None and self.sessions_started >= s.sessions:
            return False
        if s.duration_s is not None and self.env.now >= s.duration_s:
            return False
        return not self._request_cap_reached()

    def _request_cap_reached(self) -> bool:
        return self.spec.requests is not None and self.requests_issued >= self.spec.requests

    def _start_session(self) -> loop.Process:
        rng = self._next_session_rng()
        group = self._pick_group(rng)
        self.sessions_started += 1
        return self.env.process(self._session(group, f"s-{self.sessions_started}", rng))

    def _next_session_rng(self) -> np.random.Generator:
        """The next session's stream. Spawned SESSION_BATCH at a time: `spawn(n)` numbers its
        children on from the last one spawned, so the k-th session gets the same stream as one
        `spawn(1)` per session would give it, for less per-call overhead."""
        if not self._spawned:
            self._spawned = self._session_rngs.spawn(SESSION_BATCH)[::-1]
        return self._spawned.pop()

    def _pick_group(self, rng: np.random.Generator) -> _Group:
        """Weighted: a draw against the cumulative weights. Cycle: the groups in order, each for
        `weight` sessions in a row (rounded; 1 by default, so plain alternation), which is how
        the seed table's "one request in four is big" is written: weights 3 and 1.
        """
        if self.spec.group_order == "cycle":
            group = self._cycle[self._next_in_cycle % len(self._cycle)]
            self._next_in_cycle += 1
            return group
        if len(self.groups) == 1:
            return self.groups[0]
        u = rng.random() * self._cumulative[-1]
        return self.groups[min(bisect.bisect_right(self._cumulative, u), len(self.groups) - 1)]

    def _session(self, group: _Group, session_id: str, rng: np.random.Generator):
        """Turns one after another; a rejected or failed turn ends the session (the user gives up)."""
        spec = group.spec
        conv = group.prompt.fork()
        turns = max(1, sample_int(spec.turns, rng))
        for turn in range(1, turns + 1):
            if self._request_cap_reached():
                return
            outcome = yield self._submit(self._next_request(group, conv, session_id, turn, rng))
            if outcome != "completed":
                self.turns_cut += turns - turn
                return
            if turn == turns:
                return
            pause = sample(spec.think_time_s, rng)
            if pause > 0:
                yield self.env.timeout(pause)

    def _next_request(
        self, group: _Group, conv: Conversation, session_id: str, turn: int, rng: np.random.Generator
    ) -> Request:
        """Draw the question and the answer, extend the conversation, key its new blocks.

        A question may be empty (the seed table's "exact cache" row repeats the system prompt),
        unless the prompt would be; at least one output token, since a call always produces
        the first token (what TTFT measures).
        """
        spec = group.spec
        question = sample_int(spec.question_tokens, rng)
        if conv.length + question == 0:
            question = 1
        output = max(1, sample_int(spec.output_tokens, rng))
        prompt = conv.length + question
        conv.extend(random_tokens(rng, question + output))
        self.requests_issued += 1
        return Request(
            id=f"req-{self.requests_issued}",
            session=session_id,
            group=spec.name,
            turn=turn,
            prompt_tokens=prompt,
            output_tokens=output,
            block_keys=tuple(conv.keys),
            arrival=self.env.now,
            **group.slo,
        )
