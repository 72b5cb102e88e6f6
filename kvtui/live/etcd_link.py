"""A connection to etcd for a synchronous program: aetcd's asyncio client on a thread of its own.

kvtui live is threads (the polling loop, the proxy's handlers); aetcd 1.0.0 is asyncio. The link
runs one event loop on a daemon thread and hands it coroutines: `call` waits for the answer
(election, reading the snapshot), `submit` does not (the writes of the polling loop, whose
answer comes back through a callback). aetcd is imported here and only here, when `--metadata`
is given: it is the optional extra `kvtui[etcd]`, and `MissingClient` says how to install it.

aetcd's client talks to one member; the link holds the target's endpoints and, when a call
fails to reach its member, moves to the next one for the calls after it (a member down is an
etcd cluster's ordinary failure, and its client URLs are all equivalent).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

from kvtui.live.etcd_url import EtcdTarget

RPC_TIMEOUT_S = 2  # every call: a member that does not answer in this long counts as down


class MissingClient(Exception):
    """aetcd is not installed (the optional extra `kvtui[etcd]`)."""


def load_aetcd():
    """The aetcd module, or MissingClient saying how to install it."""
    try:
        import aetcd
    except ImportError as e:
        raise MissingClient("etcd needs the aetcd client: pip install 'kvtui[etcd]' "
                            f"(aetcd 1.0.0) ({e})") from None
    return aetcd


class EtcdLink:
    def __init__(self, target: EtcdTarget):
        self.aetcd = load_aetcd()
        self.target = target
        self._at = 0  # index of the endpoint in use
        self._client: Any = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kvtui-etcd", daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self.target.endpoints[self._at]
        return f"{host}:{port}"

    def client(self):
        """The aetcd client of the endpoint in use (made on the loop's thread, on first use)."""
        if self._client is None:
            host, port = self.target.endpoints[self._at]
            self._client = self.aetcd.Client(host, port, timeout=RPC_TIMEOUT_S)
        return self._client

    def failed(self, error: BaseException) -> None:
        """A call failed to reach its member: the next call goes to the next endpoint."""
        if isinstance(error, (self.aetcd.exceptions.ConnectionFailedError, self.aetcd.exceptions.ConnectionTimeoutError)):
            old, self._client = self._client, None
            self._at = (self._at + 1) % len(self.target.endpoints)
            if old is not None:
                self.loop.create_task(old.close())

    def call(self, work: Callable[[], Awaitable], timeout: float | None = None):
        """Run `work()` on the loop and wait for its result (its exception is raised here)."""
        return self.submit(work).result(timeout)

    def submit(self, work: Callable[[], Awaitable], done: Callable[[Future], None] | None = None) -> Future:
        """Run `work()` on the loop without waiting; `done(future)` when it ends, always on the
        loop's thread. (A future that is done before its callback is added runs the callback at
        once in the caller's thread: the keeper sends under its lock and its callback takes that
        lock, so under load, when the loop answered first, the polling thread deadlocked and
        route mode stopped reading KV events; tests/live/test_etcd_link.py.)"""
        future = asyncio.run_coroutine_threadsafe(self._guarded(work), self.loop)
        if done is not None:
            future.add_done_callback(lambda f: self.loop.call_soon_threadsafe(done, f))
        return future

    async def _guarded(self, work: Callable[[], Awaitable]):
        try:
            return await work()
        except Exception as e:
            self.failed(e)
            raise

    def close(self) -> None:
        if self._client is not None:
            try:
                self.call(self._client.close, timeout=RPC_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - closing a link to a member that is gone
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=RPC_TIMEOUT_S)
