"""`kvtui live --route POLICY --metadata etcd://...`: route mode with its state in etcd, and a
standby that takes over (issue 34, item 6; Mooncake's master pattern on live engines).

The order of a takeover: win the routing lease (kvtui/live/etcd_election.py: a standby waits
here until the leader's lease is gone), read the snapshot the last leader wrote
(kvtui/live/etcd_snapshot.py) into a fresh state and the router's session routes, then open the
session with each subscriber starting at the seq the snapshot expected next (the engines'
replay fills what came after it), the proxy and the keeper that writes every batch
(kvtui/live/etcd_keeper.py). A clean exit writes what is left and gives the lease back, so a
standby takes over at once; a killed leader's lease expires `ttl` seconds after its last refresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kvtui.live.etcd_election import Leadership, campaign, current_leader, me, resign
from kvtui.live.etcd_keeper import EtcdKeeper
from kvtui.live.etcd_link import EtcdLink
from kvtui.live.etcd_snapshot import Snapshot, load
from kvtui.live.etcd_url import EtcdTarget
from kvtui.live.state import LiveState


class Unreachable(Exception):
    """No etcd member of the target answers."""


@dataclass
class Backend:
    link: EtcdLink
    leadership: Leadership
    snapshot: Snapshot
    took_s: float  # from winning the lease to the snapshot read
    keeper: EtcdKeeper | None = None

    def state(self) -> LiveState:
        state = LiveState()
        self.snapshot.restore(state)
        return state

    def attach(self, session, router, proxy) -> None:
        """The router's sessions and the block size as the last leader left them, the proxy
        gated on the lease, and the keeper as the session's last source."""
        router.sessions.update(self.snapshot.routes())
        if self.snapshot.block_size is not None:
            proxy.assumed_block_size = self.snapshot.block_size
        proxy.gate = lambda: self.leadership.why if self.leadership.lost.is_set() else None
        self.keeper = EtcdKeeper(self.link, self.leadership, session, router, self.snapshot)
        session.sources.append(self.keeper)

    def line(self) -> str:
        return self.keeper.line() if self.keeper is not None else "etcd: nothing written"

    def close(self) -> None:
        resign(self.link, self.leadership)
        self.link.close()


def take_over(target: EtcdTarget, ttl: int, listen: str, say) -> Backend:
    """Connect, win the routing lease (waiting as a standby while another holds it: `say` tells
    who), and read the snapshot. Unreachable when no member answers at the start."""
    link = EtcdLink(target)
    _reachable(link)
    leadership = campaign(link, ttl, me(listen),
                          waiting=lambda holder: say(f"standby: waiting for the routing lease on {target} (held by {holder})"))
    t0 = time.monotonic()
    snapshot = load(link)
    return Backend(link, leadership, snapshot, time.monotonic() - t0)


def _reachable(link: EtcdLink) -> None:
    for _ in link.target.endpoints:
        try:
            current_leader(link)
            return
        except Exception:  # noqa: BLE001 - this member does not answer: the link tries the next
            continue
    link.close()
    raise Unreachable(f"no etcd member answers at {link.target}")
