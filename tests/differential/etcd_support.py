"""etcd members on loopback for the tests that run beside a real etcd (`.ci/peers/etcd.sh`):
tests/differential/test_etcd_raft.py (three members, a leader killed) and
tests/live/test_live_etcd.py (one member under two route-mode kvtui processes)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@contextmanager
def etcd_members(n: int, election_ms: int = 1000, pre_vote: bool = False,
                 proxy: Callable[[int, int, int], object] | None = None):
    """`n` members named m1.. on 127.0.0.1 with temporary data dirs, heartbeat 100 ms; yields
    {client port: process}, each process with its `log_path` (etcd's log); every member killed
    and its data removed on the way out. With `proxy`, each member is advertised at a port of its
    own, its front, and `proxy(client port, front port, peer port)` is called before the members
    start, to put there what forwards to the member (peer_cut_proxy.py)."""
    etcd = shutil.which("etcd") or "/usr/bin/etcd"
    data = tempfile.mkdtemp(prefix="kvtui-etcd-")
    ports = free_ports(3 * n)  # at once: ports freed and asked for again may come back
    clients, peers = ports[:n], ports[n:2 * n]
    fronts = ports[2 * n:] if proxy else peers
    if proxy:
        for c, f, p in zip(clients, fronts, peers):
            proxy(c, f, p)
    names = [f"m{i + 1}" for i in range(n)]
    initial = ",".join(f"{m}=http://127.0.0.1:{f}" for m, f in zip(names, fronts))
    procs = {}
    try:
        for m, c, p, f in zip(names, clients, peers, fronts):
            log = Path(data) / f"{m}.log"
            procs[c] = subprocess.Popen(
                [etcd, "--name", m, "--data-dir", f"{data}/{m}",
                 "--listen-client-urls", f"http://127.0.0.1:{c}", "--advertise-client-urls", f"http://127.0.0.1:{c}",
                 "--listen-peer-urls", f"http://127.0.0.1:{p}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{f}",
                 "--initial-cluster", initial, "--initial-cluster-state", "new", f"--pre-vote={str(pre_vote).lower()}",
                 "--heartbeat-interval", "100", "--election-timeout", str(election_ms)],
                stdout=subprocess.DEVNULL, stderr=log.open("wb"))
            procs[c].log_path = log
        yield procs
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)
