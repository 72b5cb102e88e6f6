"""etcd members on loopback for the tests that run beside a real etcd (`.ci/peers/etcd.sh`):
tests/differential/test_etcd_raft.py (three members, a leader killed) and
tests/live/test_live_etcd.py (one member under two route-mode kvtui processes)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@contextmanager
def etcd_members(n: int, election_ms: int = 1000):
    """`n` members named m1.. on 127.0.0.1 with temporary data dirs, heartbeat 100 ms; yields
    {client port: process}; every member killed and its data removed on the way out."""
    etcd = shutil.which("etcd") or "/usr/bin/etcd"
    data = tempfile.mkdtemp(prefix="kvtui-etcd-")
    ports = free_ports(2 * n)
    clients, peers = ports[:n], ports[n:]
    names = [f"m{i + 1}" for i in range(n)]
    initial = ",".join(f"{m}=http://127.0.0.1:{p}" for m, p in zip(names, peers))
    procs = {}
    try:
        for m, c, p in zip(names, clients, peers):
            procs[c] = subprocess.Popen(
                [etcd, "--name", m, "--data-dir", f"{data}/{m}",
                 "--listen-client-urls", f"http://127.0.0.1:{c}", "--advertise-client-urls", f"http://127.0.0.1:{c}",
                 "--listen-peer-urls", f"http://127.0.0.1:{p}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{p}",
                 "--initial-cluster", initial, "--initial-cluster-state", "new",
                 "--heartbeat-interval", "100", "--election-timeout", str(election_ms)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield procs
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)
