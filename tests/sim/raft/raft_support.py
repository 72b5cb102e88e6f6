"""What the Raft tests share: a small replicated scenario written to a file, and a standalone
group (no engine) driven by a seeded fault schedule."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kvtui.scenario import load_scenario
from kvtui.scenario.model import Replication
from kvtui.scenario.replication import member_names
from kvtui.sim import loop
from kvtui.sim.raft.group import RaftGroup

SCALE = max(1, int(os.environ.get("KVTUI_RAFT_SCALE", "1")))
"""The size knob: schedules per property test (x 8). 1 in CI; `KVTUI_RAFT_SCALE=50` by hand."""

BASE = """
name: raft-test
seed: 5
model: llama-3.1-8b
latency: {model: roofline}
router: {policy: load_prefix}
cluster:
  block_size: 16
  hardware: h100-80gb
  nodes:
    - {name: node-a, kv_blocks: 128, max_num_seqs: 8}
    - {name: node-b, kv_blocks: 128, max_num_seqs: 8}
workload:
  duration_s: DURATION
  arrival: {process: poisson, rate: 4}
  groups:
    - name: chat
      system_prompt_tokens: 256
      question_tokens: {dist: uniform, low: 16, high: 128}
      output_tokens: 16
      turns: {dist: uniform, low: 1, high: 4}
      think_time_s: 0.5
EVENTS
metadata:
  while_down: wait
  replication: REPLICATION
"""


def scenario(tmp_path: Path, replication: str, events: str = "", duration: float = 20.0, name: str = "r.yaml"):
    text = BASE.replace("DURATION", f"{duration:g}").replace("REPLICATION", replication)
    text = text.replace("EVENTS", f"events:\n{events}" if events else "")
    path = tmp_path / name
    path.write_text(text)
    return load_scenario(path)


class Harness:
    """A group on its own loop: a client proposing at random times, faults from a seeded
    schedule; `step()` runs one loop event."""

    def __init__(self, seed: int, members: int, pre_vote: bool, sim_s: float):
        self.rng = np.random.default_rng(seed)
        self.env = loop.Environment()
        rep = Replication(members=members, pre_vote=pre_vote, heartbeat_ms=50.0, election_timeout_ms=(300.0, 600.0),
                          link_latency_ms=float(self.rng.uniform(0.1, 20.0)))
        self.names = member_names(members)
        self.group = RaftGroup(self.env, self.names, rep, 1e-4, np.random.default_rng(seed + 7), self._emit,
                               self._apply, lambda: None, lambda: False)
        self.sim_s = sim_s
        self.serial = 0
        self.acked: dict[int, float] = {}  # serial -> when a leader first applied it: acknowledged to the client
        self.applied_serials: dict[str, list[int]] = {}
        self.emitted: list = []
        self._schedule()

    def _emit(self, cls, **fields) -> None:
        self.emitted.append((cls, fields))

    def _apply(self, m, batch) -> None:
        for _i, e in batch:
            if e.serial and e.serial > m.max_serial:
                m.max_serial = e.serial
                self.applied_serials.setdefault(m.name, []).append(e.serial)
                if m.role == "leader":
                    self.acked.setdefault(e.serial, self.env.now)
        m.durable_applied = m.applied

    def _at(self, t: float, fn) -> None:
        self.env.call_later(t, lambda _ev: fn())

    def _schedule(self) -> None:
        """Proposals all along; faults in the first 70 % of the run, the rest to heal."""
        rng, fault_end = self.rng, 0.7 * self.sim_s
        t = 0.0
        while t < self.sim_s:
            t += float(rng.exponential(0.05))
            self._at(t, self._propose)
        for _ in range(int(rng.integers(2, 8))):
            at = float(rng.uniform(0, fault_end))
            length = float(rng.uniform(0.1, 3.0))
            end = min(fault_end, at + length)
            match int(rng.integers(3)):
                case 0:
                    name = str(rng.choice(self.names))
                    self._at(at, lambda n=name: self.group.member_down(n))
                    self._at(end, lambda n=name: self.group.member_up(n, lambda _m: None))
                case 1:
                    self._at(at, lambda e=end: self._kill_leader(e))
                case _:
                    k = int(rng.integers(1, len(self.names)))
                    side = tuple(str(x) for x in rng.choice(self.names, size=k, replace=False))
                    self._at(at, lambda s=side, d=end - at: self.group.partition(s, max(d, 0.01)))

    def _kill_leader(self, end: float) -> None:
        m = self.group.leader()
        if m is not None:
            self.group.member_down(m.name)
            self._at(max(0.0, end - self.env.now), lambda n=m.name: self.group.member_up(n, lambda _m: None))

    def _propose(self) -> None:
        self.serial += 1
        self.group.propose(self.serial, ("cmd", self.serial))

    def step(self) -> bool:
        return self.env.run_through(self.sim_s, 1) == 1
