"""A network cut between etcd members, made by an HTTP-aware proxy in front of each member's peer port.

SIGSTOP is not a partition (a stopped member neither campaigns nor serves reads), and a plain TCP
proxy cannot tell who dialed a connection. etcd's peers speak HTTP, and every raft request names its
sender: etcd v3.4.23 `etcdserver/api/rafthttp/stream.go` (`streamReader.dial`, the long-lived
GET /raft/stream/{message,msgapp}/<local id>) sets `X-Server-From: <local id>` and
`X-Raft-To: <remote id>`; `etcdserver/api/rafthttp/util.go` (`createPostRequest`, used by
`pipeline.go`'s POST /raft and `snapshot_sender.go`'s POST /raft/snapshot) sets `X-Server-From`.
Ids are `types.ID.String()`, lower-case hex. A connection's keep-alive requests all come from the
one `http.Transport` of one sender, so the first request's headers name the connection.

So each member is advertised at a proxy port; the proxy reads the first request's headers, and
while a member is cut it refuses every connection from it (by header) or to it (by the proxy's own
member), both ways, and closes the ones already open. Requests without the header (/version,
/members, probing) are let through unless they go to a cut member: they carry no raft term.
"""

from __future__ import annotations

import socket
import threading

HEAD_MAX = 64 * 1024


def _sender(head: bytes) -> str | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-server-from":
            return value.strip().decode("ascii", "replace").lower()
    return None


def _read_head(conn: socket.socket) -> bytes | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(4096)
        if not chunk or len(buf) > HEAD_MAX:
            return None
        buf += chunk
    return buf


def _shut(socks) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        _shut((src, dst))


class Cut:
    """The members (hex ids) cut from all others, shared by every member's proxy."""

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.proxies: list[PeerProxy] = []
        self.refused = 0

    def blocks(self, sender: str | None, member: str | None) -> bool:
        return bool(self.members) and (sender in self.members or member in self.members)

    def set(self, members: set[str]) -> None:
        self.members = set(members)
        for proxy in self.proxies:
            proxy.close_blocked()


class PeerProxy:
    """Listens on `port`, forwards to the member's real peer port `target`; `member` (hex id) is
    set once the cluster has told its ids."""

    def __init__(self, cut: Cut, port: int, target: int) -> None:
        self.cut, self.target, self.member = cut, target, None
        self.open: list[tuple[str | None, socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        cut.proxies.append(self)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            head = _read_head(conn)
            conn.settimeout(None)
            if head is None:
                conn.close()
                return
            sender = _sender(head)
            if self.cut.blocks(sender, self.member):
                self.cut.refused += 1
                conn.close()
                return
            up = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            up.settimeout(None)
            up.sendall(head)
        except OSError:
            conn.close()
            return
        with self.lock:
            self.open.append((sender, conn, up))
        if self.cut.blocks(sender, self.member):  # cut while it was connecting: close_blocked missed it
            _shut((conn, up))
        threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()
        _pipe(conn, up)
        with self.lock:
            self.open = [o for o in self.open if o[1] is not conn]
        conn.close()
        up.close()

    def close_blocked(self) -> None:
        self._shut_where(lambda sender: self.cut.blocks(sender, self.member))

    def close(self) -> None:
        self.server.close()
        self._shut_where(lambda _sender: True)

    def _shut_where(self, doomed) -> None:
        with self.lock:
            pairs = [(conn, up) for sender, conn, up in self.open if doomed(sender)]
        for pair in pairs:
            _shut(pair)
