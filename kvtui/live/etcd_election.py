"""Who routes: one `kvtui live` holds an etcd lease on the leader key; the others wait on it.

The campaign is Mooncake's master election (kvcache-ai/Mooncake v0.3.12.post1-245, commit
3b5a594: mooncake-store/src/ha_helper.cpp `MasterViewHelper::ElectLeader`, with
mooncake-common/etcd/etcd_wrapper.go `EtcdStoreCreateWithLeaseWrapper`,
`EtcdStoreWatchUntilDeletedWrapper` and `EtcdStoreKeepAliveWrapper`):
1. read the leader key; while it exists, watch it until it is deleted (its holder revoked the
   lease on the way out, or died and the lease expired: `ttl` seconds after its last keep-alive);
2. grant a lease of `ttl` seconds and create the key under it in a transaction that succeeds
   only if the key does not exist (`create_revision == 0`): of several waiting, one wins; the
   others go back to 1 after a second, as Mooncake does;
3. keep the lease alive (a refresh every third of its TTL); when a refresh fails, or finds the
   lease gone, leadership is lost (`Leadership.lost`).
Mooncake's TTL is 5 s (`ETCD_MASTER_VIEW_LEASE_TTL`), kvtui's default too.

One difference, on purpose: Mooncake's new leader sleeps one TTL before serving, so that an old
leader cut off from etcd has seen its keep-alive fail and stopped. kvtui does not wait: every
write of the new leader's state is a transaction that compares the leader key's
`create_revision` with its own (kvtui/live/etcd_keeper.py), so an old leader's writes fail
instead of overwriting, and its proxy stops routing at its first failed write or refresh. A
deposed router that still answers a request for a moment costs a worse cache hit, never a
wrong answer: the engines serve any request.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from dataclasses import dataclass, field
from functools import partial

from kvtui.live.etcd_link import EtcdLink

RETRY_S = 1.0  # after a lost race or an etcd error, as Mooncake's loop sleeps


@dataclass
class Leadership:
    lease: int
    revision: int  # the leader key's create_revision: the version writes are fenced with
    lost: threading.Event = field(default_factory=threading.Event)
    why: str = ""

    def lose(self, why: str) -> None:
        if not self.lost.is_set():
            self.why = why
            self.lost.set()


def leader_key(link: EtcdLink) -> bytes:
    return link.target.prefix + b"leader"


def me(listen: str) -> bytes:
    """The leader key's value: who holds it, for the ones waiting to say."""
    return f"{socket.gethostname()} pid {os.getpid()} routing on {listen}".encode()


def current_leader(link: EtcdLink) -> str | None:
    got = link.call(lambda: link.client().get(leader_key(link)))
    return None if got is None else got.value.decode(errors="replace")


def campaign(link: EtcdLink, ttl: int, name: bytes, waiting=None) -> Leadership:
    """Block until this process holds the leader key (steps 1 and 2 of the module docstring);
    `waiting(holder)` is called each time a holder is found, before watching it. Then keep the
    lease alive in the background (step 3)."""
    while True:
        try:
            won = link.call(lambda: _round(link, ttl, name, waiting))
        except (link.aetcd.exceptions.ClientError, TimeoutError):  # etcd unreachable, a member failing: again, as Mooncake does
            won = None
        if won is not None:
            link.submit(partial(_keep_alive, link, won, ttl))
            return won
        threading.Event().wait(RETRY_S)


async def _round(link: EtcdLink, ttl: int, name: bytes, waiting) -> Leadership | None:
    client, key = link.client(), leader_key(link)
    holder = await client.get(key)
    if holder is not None:
        if waiting is not None:
            waiting(holder.value.decode(errors="replace"))
        await _until_deleted(client, key, holder.mod_revision)
    lease = await client.lease(ttl)
    tx = client.transactions
    won, _ = await client.transaction(compare=[tx.create(key) == 0], success=[tx.put(key, name, lease=lease.id)], failure=[])
    if not won:
        await client.revoke_lease(lease.id)
        return None
    got = await client.get(key)
    return Leadership(lease.id, got.create_revision)


async def _until_deleted(client, key: bytes, seen: int) -> None:
    """Watch `key` from just after the revision it was read at, until an event deletes it
    (from that revision: a deletion between the read and the watch is not missed)."""
    watch = await client.watch(key, start_revision=seen + 1)
    try:
        async for event in watch:
            if event.kind == "DELETE":
                return
    finally:
        await watch.cancel()


async def _keep_alive(link: EtcdLink, leadership: Leadership, ttl: int) -> None:
    """Refresh the lease every third of its TTL; a failed refresh, or a lease etcd no longer
    has (TTL <= 0), loses leadership, as Mooncake's KeepAlive channel closing does."""
    while not leadership.lost.is_set():
        await asyncio.sleep(ttl / 3)
        try:
            reply = await link.client().refresh_lease(leadership.lease)
        except link.aetcd.exceptions.ClientError:  # the member is gone (the link moved on): the lease may live on the others
            continue
        if reply is None or reply.TTL <= 0:
            leadership.lose("the routing lease expired")


def resign(link: EtcdLink, leadership: Leadership) -> None:
    """Give the lease back (a clean exit): the key goes with it and a standby takes over at once."""
    leadership.lose("resigned")
    try:
        link.call(lambda: link.client().revoke_lease(leadership.lease), timeout=5)
    except Exception:  # noqa: BLE001 - etcd gone: the lease expires by itself
        pass
