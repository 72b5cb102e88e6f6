"""`--metadata etcd://HOST:PORT[,HOST:PORT...][/CLUSTER]`: where route mode keeps its state.

The endpoints are etcd members' client URLs (tried in order, the next one when a member stops
answering); CLUSTER names the key prefix, so several kvtui clusters can share one etcd (as
Mooncake's `MC_STORE_CLUSTER_ID` does for its master view key: kvcache-ai/Mooncake
v0.3.12.post1-245 (commit 3b5a594), mooncake-store/src/ha_helper.cpp). Default `kvtui`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLUSTER = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class EtcdTarget:
    endpoints: tuple[tuple[str, int], ...]
    cluster: str = "kvtui"

    @property
    def prefix(self) -> bytes:
        return f"kvtui/{self.cluster}/".encode()

    def __str__(self) -> str:
        return "etcd://" + ",".join(f"{h}:{p}" for h, p in self.endpoints) + f"/{self.cluster}"


def parse_target(text: str) -> EtcdTarget:
    """The target `text` names; ValueError saying what is wrong (the CLI prefixes `--metadata:`)."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme != "etcd":
        raise ValueError(f"{text!r} is not etcd://HOST:PORT[,HOST:PORT...][/CLUSTER]")
    hosts, _, cluster = rest.partition("/")
    if cluster and not _CLUSTER.fullmatch(cluster):
        raise ValueError(f"cluster name {cluster!r}: letters, digits, '.', '_', '-', at most 64")
    endpoints = []
    for item in hosts.split(","):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"{item!r} is not HOST:PORT (PORT from 1 to 65535)")
        endpoints.append((host, int(port)))
    return EtcdTarget(tuple(endpoints), cluster or "kvtui")
