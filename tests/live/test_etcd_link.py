"""The link's callbacks run on its own thread, however fast etcd answers (kvtui/live/etcd_link.py).

No etcd here: the link's loop runs a coroutine that answers at once, and the interleaving that
deadlocked route mode under load (the loop finishing the work before `submit` adds the
callback) is made certain by waiting for the answer inside `run_coroutine_threadsafe`.
"""

from __future__ import annotations

import asyncio
import threading
import types

import pytest

from kvtui.live import etcd_link
from kvtui.live.etcd_url import EtcdTarget


@pytest.fixture
def link(monkeypatch):
    monkeypatch.setattr(etcd_link, "load_aetcd", lambda: types.SimpleNamespace())
    made = etcd_link.EtcdLink(EtcdTarget((("127.0.0.1", 2379),)))
    yield made
    made.loop.call_soon_threadsafe(made.loop.stop)
    made._thread.join(timeout=5)


def test_a_callback_runs_on_the_link_thread_when_the_answer_came_first(link, monkeypatch):
    real = asyncio.run_coroutine_threadsafe

    def answered_first(coro, loop):
        future = real(coro, loop)
        future.result(5)  # the loop is done before the caller adds its callback
        return future

    monkeypatch.setattr(etcd_link.asyncio, "run_coroutine_threadsafe", answered_first)
    lock, ran = threading.Lock(), threading.Event()
    where: list[str] = []

    async def answer():
        return 1

    def done(future):
        # the keeper's `_sent` takes the lock its `_send` held while submitting (a timeout
        # here, so the old order fails the test instead of hanging it)
        if lock.acquire(timeout=1):
            lock.release()
            where.append(threading.current_thread().name)
        else:
            where.append(f"deadlocked on {threading.current_thread().name}")
        ran.set()

    with lock:
        link.submit(answer, done)
    assert ran.wait(5)
    assert where == ["kvtui-etcd"]
