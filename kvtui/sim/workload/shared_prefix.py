"""inference-perf's shared-prefix workload: system prompts shared by groups of users.

Matched against kubernetes-sigs/inference-perf, `inference_perf/datagen/synthetic/
shared_prefix_datagen.py` (`SharedPrefixDataGenerator`, at commit 1d47227) and
`inference_perf/apis/user_session.py` (at commit 0a30a83: `LocalUserSession`,
`UserSessionCompletionAPIData`), the generator the predicted-latency blog (llm-d, seed 002) used for its workloads A-D. What kvtui does the same way:

- `num_groups` system prompts; `num_prompts_per_group` prompts (users) per group, each its
  group's system prompt followed by its own question, composed at token level (inference-perf
  composes prefix and question ids since its off-by-one fix; the joining space is not modelled).
- Lengths are drawn once, up front, from one seeded stream and in inference-perf's order: one
  system prompt length per group, then per group the question lengths and the output lengths
  of its users. A user keeps its question and output length for the whole run: every round
  resends the same question text with the same `max_tokens` (inference-perf's `prompts[i]` and
  `flat_output_lens[i]`; with `ignore_eos` the server produces exactly that many tokens).
- The users are shuffled once by a seeded permutation; request i goes to user
  `order[i mod users]` as its round `i div users` (inference-perf's `load_lazy_data`:
  `user_id = data_index % len(user_sessions)`, `round = data_index // len(user_sessions)`).
  The load generator (here `workload.arrival`) decides when request i is sent: each arrival is
  one request, so `arrival.rate` is requests per second.
- Multi-turn (`enable_multi_turn_chat`): a user's context starts as its system prompt; a round
  sends context + question; on success the context becomes that prompt + the answer, so round
  k+1's prompt starts with round k's prompt and answer. A user's rounds never overlap: a
  request due while the previous round is in flight waits for it (the session's
  `_in_flight` lock), and is sent (arrives) when it is released. A failed round leaves the
  context as it was (`process_failure` restores `_session_context`); the user carries on.
- `max_context_tokens` drops the oldest rounds of history while prompt + output would exceed
  it, as `to_request_body` trims history to the model's context length (inference-perf keeps a
  200-token margin for tokenizer drift, which exact token counts here do not need).
- Without multi-turn, request i sends prompt i again and again: the same tokens, so a repeat is
  an exact prefix-cache hit.

Spreads: the blog writes `question_len=30 +/- 9`; inference-perf expresses that as a
`Distribution` (mean, std_dev, min, max, clipped and rounded). Here `spread_dist: uniform` draws
evenly over [len x (1 - spread), len x (1 + spread)], `normal` draws a normal with std =
spread x len clipped to the same bounds (inference-perf's normal-with-min/max); `question_dist`
/ `output_dist` take any `Dist` instead (the MaaS scenario's heavy-tailed lognormals).

Randomness: the one Generator passed in is spawned into a stream for the prompts (lengths,
system prompts, shuffle), one for the arrival gaps, and one per user (its question tokens,
drawn when it first speaks, and its answers, round by round). A user's rounds are serialised,
so its draws come in the same order whatever the cluster does: the same seed gives the same
requests under every routing policy.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from kvtui.sim import loop

from kvtui.scenario.model import Dist, SharedPrefix, Workload
from kvtui.sim.distributions import sample_int
from kvtui.sim.request import Request
from kvtui.sim.workload.arrivals import Submit, start_arrivals
from kvtui.sim.workload.slo import slo_fields
from kvtui.sim.workload.tokens import Conversation, random_tokens


def spread_lengths(
    length: int, spread: float, kind: str, count: int, rng: np.random.Generator, minimum: int = 0
) -> np.ndarray:
    """`count` integer lengths of `length` +/- `spread` (a share), never below `minimum`.

    uniform: every integer in [round(length (1 - spread)), round(length (1 + spread))] equally
    likely; normal: N(length, spread x length) clipped to those bounds and rounded. A zero spread
    draws nothing from the stream.
    """
    lo = max(minimum, int(np.floor(length * (1.0 - spread) + 0.5)))
    hi = max(lo, int(np.floor(length * (1.0 + spread) + 0.5)))
    if spread <= 0 or lo == hi:
        return np.full(count, max(minimum, length), dtype=np.int64)
    if kind == "normal":
        x = rng.normal(length, spread * length, size=count)
        return np.clip(np.floor(np.clip(x, lo, hi) + 0.5), lo, hi).astype(np.int64)
    return rng.integers(lo, hi + 1, size=count, dtype=np.int64)


def _lengths(dist: Dist | None, length: int, spread: float, kind: str, count: int, rng, minimum: int = 0) -> np.ndarray:
    if dist is None:
        return spread_lengths(length, spread, kind, count, rng, minimum)
    return np.array([max(minimum, sample_int(dist, rng)) for _ in range(count)], dtype=np.int64)


class _User:
    """One user (one inference-perf prompt / user session) and its conversation so far."""

    __slots__ = ("index", "group", "question_len", "output_len", "rng", "question", "conv", "history",
                 "pending", "busy", "rounds")

    def __init__(self, index: int, group: int, question_len: int, output_len: int, rng: np.random.Generator):
        self.index = index
        self.group = group
        self.question_len = question_len
        self.output_len = output_len
        self.rng = rng
        self.question: np.ndarray | None = None  # drawn on first use, from the user's own stream
        self.conv: Conversation | None = None  # multi-turn context (system prompt + history)
        self.history: list[np.ndarray] = []  # rounds' question + answer, kept only to trim
        self.pending: deque[loop.Event] = deque()  # requests due while a round is in flight
        self.busy = False
        self.rounds = 0


class SharedPrefixWorkload:
    """The engine's workload interface (like `SyntheticWorkload`) for `workload.shared_prefix`.

    Stop conditions: `workload.requests` (requests sent, queued ones included), `duration_s`
    (no request becomes due from then on; ones already due are still sent),
    `shared_prefix.rounds` (every user has had that many). `workload.sessions` does not apply:
    the users are fixed (num_groups x num_prompts_per_group).
    """

    def __init__(self, spec: Workload, block_size: int, rng: np.random.Generator):
        sp: SharedPrefix = spec.shared_prefix
        self.spec = spec
        self.sp = sp
        self.block_size = block_size
        prompt_rng, self._arrival_rng, users_rng = rng.spawn(3)
        groups, per_group = sp.num_groups, sp.num_prompts_per_group
        self.system_lens = spread_lengths(sp.system_prompt_len, sp.system_prompt_spread, sp.spread_dist, groups, prompt_rng)
        question_lens, output_lens = [], []
        for _ in range(groups):
            question_lens.append(_lengths(sp.question_dist, sp.question_len, sp.question_spread, sp.spread_dist, per_group, prompt_rng))
            output_lens.append(_lengths(sp.output_dist, sp.output_len, sp.output_spread, sp.spread_dist, per_group, prompt_rng, 1))
        self.group_names = [f"g{g}" for g in range(groups)]
        self.prompts = [Conversation.of(random_tokens(prompt_rng, int(n)), block_size) for n in self.system_lens]
        user_rngs = users_rng.spawn(groups * per_group)
        self.users: list[_User] = []
        for g in range(groups):
            for p in range(per_group):
                q = int(question_lens[g][p])
                if q == 0 and self.system_lens[g] == 0:
                    q = 1  # a prompt has at least one token
                index = g * per_group + p
                self.users.append(_User(index, g, q, int(output_lens[g][p]), user_rngs[index]))
        self.order = prompt_rng.permutation(len(self.users))
        self._slo = slo_fields(sp.slo, sp.sheddable)
        self.dispatched = 0  # requests that became due (sent or waiting for their user)
        self.requests_issued = 0  # requests sent to the cluster
        self.sessions_started = 0  # users that have sent a first request
        self.env: loop.Environment | None = None
        self._submit: Submit | None = None

    # -- the engine's interface ------------------------------------------------------------
    def start(self, env: loop.Environment, submit: Submit) -> None:
        self.env = env
        self._submit = submit
        start_arrivals(env, self.spec.arrival, self._arrival_rng, self._may_start, self._due)

    def system_prompt_keys(self, group_name: str) -> list[int]:
        """Keys of the full blocks of a group's system prompt (what a node would pin)."""
        try:
            return list(self.prompts[self.group_names.index(group_name)].keys)
        except ValueError:
            return []

    # -- requests ----------------------------------------------------------------------------
    def _may_start(self) -> bool:
        s, sp = self.spec, self.sp
        if s.requests is not None and self.dispatched >= s.requests:
            return False
        if sp.rounds is not None and self.dispatched >= sp.rounds * len(self.users):
            return False
        return not (s.duration_s is not None and self.env.now >= s.duration_s)

    def _due(self) -> loop.Event:
        """Request number `dispatched` is due: its user sends it now, or after its current round."""
        user = self.users[int(self.order[self.dispatched % len(self.users)])]
        self.dispatched += 1
        done = self.env.event()
        user.pending.append(done)
        if not user.busy:
            user.busy = True
            self.env.process(self._user_rounds(user))
        return done

    def _user_rounds(self, user: _User):
        """Send the user's due rounds one after another; each waits for the one before."""
        while user.pending:
            done = user.pending.popleft()
            req, conv, turn_tokens = self._next_request(user)
            outcome = yield self._submit(req)
            if outcome == "completed" and self.sp.multi_turn:
                user.conv = conv
                if self.sp.max_context_tokens is not None:
                    user.history.append(turn_tokens)
            done.succeed(outcome)
        user.busy = False

    def _context(self, user: _User) -> Conversation:
        """The user's context before this round: its system prompt, then (multi-turn) its history,
        trimmed oldest-first to `max_context_tokens`."""
        system = self.prompts[user.group]
        if not self.sp.multi_turn:
            return system
        conv = user.conv or system
        limit = self.sp.max_context_tokens
        if limit is not None and user.history and conv.length + user.question_len + user.output_len > limit:
            need = user.question_len + user.output_len
            history = user.history
            total = system.length + sum(len(h) for h in history)
            while history and total + need > limit:
                total -= len(history.pop(0))
            conv = system.fork()
            for h in history:
                conv.extend(h)
            user.conv = conv
        return conv

    def _next_request(self, user: _User) -> tuple[Request, Conversation, np.ndarray]:
        if user.question is None:
            user.question = random_tokens(user.rng, user.question_len)
            self.sessions_started += 1
        context = self._context(user)
        answer = random_tokens(user.rng, user.output_len)
        turn_tokens = np.concatenate((user.question, answer))
        conv = context.fork()
        prompt = conv.length + user.question_len
        conv.extend(turn_tokens)
        user.rounds += 1
        self.requests_issued += 1
        req = Request(
            id=f"req-{self.requests_issued}",
            session=f"u{user.index}",
            group=self.group_names[user.group],
            turn=user.rounds,
            prompt_tokens=prompt,
            output_tokens=user.output_len,
            block_keys=tuple(conv.keys),
            arrival=self.env.now,
            **self._slo,
        )
        return req, conv, turn_tokens
