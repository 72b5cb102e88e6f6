"""A file layer that crashes, fills up, fails fsyncs and forgets unsynced data on demand.

`FaultFS` does everything `RealFS` does (the files are real, in a real directory) and also:

- counts every mutating operation; with `crash_at=k` the k-th one (0-based) raises
  `SimulatedCrash` instead of running, and so does every operation after it — the process is
  dead. Walking k = 0, 1, 2, ... visits "a crash after each file-system operation";
- `fail_on(op, nth, err, partial)` makes the nth call of `op` raise `OSError(err)`; a failing
  `write` first writes `partial` bytes (a disk that filled up half way through a frame);
  `fail_at=k` fails the k-th operation whatever it is (a write after half its bytes);
- keeps a model of what is *durable*: file contents as of their last fsync, directory
  entries as of their directory's last fsync (the weakest POSIX model, as in ALICE). After a
  crash, `power_loss()` rewrites the directory tree to that durable image — unsynced appends
  vanish (or survive as a torn prefix with a garbage or zeroed last sector, if an rng is
  given), renames and new files whose directory was not synced are undone.

`SimulatedCrash` derives from BaseException so that no `except Exception` / `except OSError`
in the store can swallow it: a crash is not an I/O error the writer could observe.
"""

from __future__ import annotations

import errno
import os
import shutil

from kvtui.store.fs import RealFS

MUTATING = ("mkdir", "create", "open_write", "write", "pwrite", "fsync", "close", "truncate",
            "rename", "unlink", "fsync_dir")


class SimulatedCrash(BaseException):
    """The process died at this file-system operation (nothing after it happens)."""


class FaultFS(RealFS):
    def __init__(self, root: str, *, crash_at: int | None = None, fail_at: int | None = None,
                 fail_errno: int = errno.EIO):
        self.root = os.path.abspath(root)
        self.crash_at = crash_at
        self.fail_at = fail_at  # the op with this index fails (a write: after half its bytes)
        self.fail_errno = fail_errno
        self.failed_op: tuple[int, str, str] | None = None
        self.ops = 0
        self.trace: list[tuple[str, str]] = []
        self.crashed = False
        self._faults: dict[tuple[str, int], tuple[int, int | None]] = {}
        self._calls: dict[str, int] = {}
        # durability model: inode -> current bytes / durable bytes; path -> inode
        self._next_ino = 0
        self._content: dict[int, bytearray] = {}
        self._durable: dict[int, bytes] = {}
        self._pending: dict[int, list[tuple]] = {}  # unsynced ("w", offset, data) / ("t", size)
        self._names: dict[str, int] = {}
        self._dnames: dict[str, int] = {}
        self._dirs: set[str] = set()  # directories that exist now
        self._ddirs: set[str] = set()  # directories whose entry in the parent is durable
        self._fds: dict[int, tuple[str, int]] = {}
        self._locks: list[int] = []
        self._adopt(self.root)

    # -- configuration -----------------------------------------------------------------------

    def fail_on(self, op: str, nth: int = 0, err: int = errno.EIO, partial: int | None = None):
        """Make the `nth` call (0-based) of `op` raise OSError(err), after `partial` bytes."""
        self._faults[(op, nth)] = (err, partial)
        return self

    # -- bookkeeping -------------------------------------------------------------------------

    def _adopt(self, top: str) -> None:
        """Everything already on disk under `top` counts as durable."""
        if not os.path.isdir(top):
            return
        for dirpath, _dirnames, filenames in os.walk(top):
            self._dirs.add(dirpath)
            self._ddirs.add(dirpath)
            for fn in filenames:
                p = os.path.join(dirpath, fn)
                ino = self._new_ino()
                with open(p, "rb") as f:
                    data = f.read()
                self._content[ino] = bytearray(data)
                self._durable[ino] = data
                self._names[p] = ino
                self._dnames[p] = ino

    def _new_ino(self) -> int:
        self._next_ino += 1
        return self._next_ino

    def _tick(self, op: str, path: str) -> tuple[int, int | None] | None:
        if self.crashed:
            raise SimulatedCrash(f"{op} {path} after the crash")
        k = self.ops
        if self.crash_at is not None and k >= self.crash_at:
            self.crashed = True
            raise SimulatedCrash(f"crash before op {k}: {op} {path}")
        self.ops += 1
        self.trace.append((op, path))
        n = self._calls.get(op, 0)
        self._calls[op] = n + 1
        fault = self._faults.pop((op, n), None)
        if k == self.fail_at:
            fault = (self.fail_errno, -1)
        if fault:
            self.failed_op = (k, op, path)
        return fault

    @staticmethod
    def _raise(fault: tuple[int, int | None], what: str):
        err = fault[0]
        raise OSError(err, f"injected: {os.strerror(err)}", what)

    # -- operations --------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        path = os.path.abspath(path)
        fault = self._tick("mkdir", path)
        if fault:
            self._raise(fault, path)
        super().mkdir(path)
        self._dirs.add(path)

    def create(self, path: str) -> int:
        path = os.path.abspath(path)
        fault = self._tick("create", path)
        if fault:
            self._raise(fault, path)
        fd = super().create(path)
        ino = self._new_ino()
        self._content[ino] = bytearray()
        self._durable[ino] = b""
        self._pending[ino] = []
        self._names[path] = ino
        self._fds[fd] = (path, ino)
        return fd

    def open_write(self, path: str) -> int:
        path = os.path.abspath(path)
        fault = self._tick("open_write", path)
        if fault:
            self._raise(fault, path)
        fd = super().open_write(path)
        ino = self._names.get(path)
        if ino is None:  # a file made behind our back: adopt it as durable
            ino = self._new_ino()
            data = self.read(path)
            self._content[ino] = bytearray(data)
            self._durable[ino] = data
            self._names[path] = ino
            self._dnames[path] = ino
        self._fds[fd] = (path, ino)
        return fd

    def write(self, fd: int, data) -> None:
        path, ino = self._fds[fd]
        self._write("write", fd, path, ino, bytes(data), len(self._content[ino]))

    def pwrite(self, fd: int, data, offset: int) -> None:
        path, ino = self._fds[fd]
        self._write("pwrite", fd, path, ino, bytes(data), offset)

    def _write(self, op: str, fd: int, path: str, ino: int, data: bytes, offset: int) -> None:
        fault = self._tick(op, path)
        if fault:
            data = data[: len(data) // 2 if fault[1] == -1 else (fault[1] or 0)]
        if data:
            super().pwrite(fd, data, offset)
            c = self._content[ino]
            if len(c) < offset:
                c.extend(bytes(offset - len(c)))
            c[offset:offset + len(data)] = data
            self._pending.setdefault(ino, []).append(("w", offset, data))
        if fault:
            self._raise(fault, path)

    def fsync(self, fd: int) -> None:
        path, ino = self._fds[fd]
        fault = self._tick("fsync", path)
        if fault:
            # fsyncgate: after a failed fsync the kernel may have dropped the dirty pages
            # and will not report the error again. Model the worst case: nothing new is durable.
            self._raise(fault, path)
        super().fsync(fd)
        self._durable[ino] = bytes(self._content[ino])
        self._pending[ino] = []

    def close(self, fd: int) -> None:
        path, _ = self._fds.get(fd, ("?", 0))
        fault = self._tick("close", path)
        self._fds.pop(fd, None)
        super().close(fd)
        if fault:
            self._raise(fault, path)

    def truncate(self, fd: int, size: int) -> None:
        path, ino = self._fds[fd]
        fault = self._tick("truncate", path)
        if fault:
            self._raise(fault, path)
        super().truncate(fd, size)
        c = self._content[ino]
        if len(c) < size:
            c.extend(bytes(size - len(c)))
        del c[size:]
        self._pending.setdefault(ino, []).append(("t", size))

    def rename(self, src: str, dst: str) -> None:
        src, dst = os.path.abspath(src), os.path.abspath(dst)
        fault = self._tick("rename", f"{src} -> {dst}")
        if fault:
            self._raise(fault, src)
        super().rename(src, dst)
        self._names[dst] = self._names.pop(src)

    def unlink(self, path: str) -> None:
        path = os.path.abspath(path)
        fault = self._tick("unlink", path)
        if fault:
            self._raise(fault, path)
        super().unlink(path)
        self._names.pop(path, None)

    def fsync_dir(self, path: str) -> None:
        path = os.path.abspath(path)
        fault = self._tick("fsync_dir", path)
        if fault:
            self._raise(fault, path)
        super().fsync_dir(path)
        for p in [p for p in self._dnames if os.path.dirname(p) == path]:
            del self._dnames[p]
        for p, ino in self._names.items():
            if os.path.dirname(p) == path:
                self._dnames[p] = ino
        for d in self._dirs:
            if os.path.dirname(d) == path:
                self._ddirs.add(d)

    def lock(self, path: str) -> int:
        fd = super().lock(path)
        self._locks.append(fd)
        return fd

    def unlock(self, fd: int) -> None:
        if fd in self._locks:
            self._locks.remove(fd)
        super().unlock(fd)

    # -- after the crash ---------------------------------------------------------------------

    def release(self) -> None:
        """The process is gone: the kernel closes its descriptors and drops its flock."""
        for fd in list(self._fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()
        for fd in self._locks:
            try:
                os.close(fd)
            except OSError:
                pass
        self._locks.clear()

    def power_loss(self, rng=None, sector: int = 512) -> None:
        """Rewrite the tree under `root` to its durable image (call after a crash).

        With `rng` (a `random.Random`), each file also keeps a random prefix of its unsynced
        writes, in order (the page cache may have written some back), and the last write it
        keeps may be torn: cut short, its last sector zeros or garbage.
        """
        self.release()
        live_dirs = sorted(d for d in self._dirs if d == self.root or d in self._ddirs)
        for d in sorted(self._dirs, key=len, reverse=True):
            if d != self.root and d not in self._ddirs and os.path.isdir(d):
                shutil.rmtree(d)
        for d in live_dirs:
            if os.path.isdir(d):
                for fn in os.listdir(d):
                    p = os.path.join(d, fn)
                    if os.path.isfile(p):
                        os.unlink(p)
            else:
                os.makedirs(d)
        names: dict[str, int] = {}
        images: dict[int, bytes] = {}
        for p, ino in sorted(self._dnames.items()):
            if os.path.dirname(p) not in live_dirs:
                continue
            if ino not in images:
                images[ino] = self._survivor(ino, rng, sector)
            with open(p, "wb") as f:
                f.write(images[ino])
            names[p] = ino
        # the new world: what is on disk now is durable
        self._names = dict(names)
        self._dnames = dict(names)
        self._content = {ino: bytearray(images[ino]) for ino in set(names.values())}
        self._durable = {ino: bytes(c) for ino, c in self._content.items()}
        self._pending = {ino: [] for ino in self._content}
        self._dirs = set(live_dirs)
        self._ddirs = set(live_dirs)
        self.crashed = False
        self.crash_at = None

    def _survivor(self, ino: int, rng, sector: int) -> bytes:
        data = bytearray(self._durable.get(ino, b""))
        pending = self._pending.get(ino, [])
        if rng is None or not pending:
            return bytes(data)
        keep = rng.randint(0, len(pending))
        for i, op in enumerate(pending[:keep]):
            if op[0] == "t":
                if len(data) < op[1]:
                    data.extend(bytes(op[1] - len(data)))
                del data[op[1]:]
                continue
            _, off, chunk = op
            if i == keep - 1 and rng.random() < 0.6:  # the last surviving write is torn
                chunk = bytearray(chunk[: rng.randint(0, len(chunk))])
                if chunk and rng.random() < 0.7:
                    cut = max(0, len(chunk) - rng.randint(1, sector))
                    n = len(chunk) - cut
                    chunk[cut:] = bytes(n) if rng.random() < 0.5 else bytes(
                        rng.getrandbits(8) for _ in range(n))
            if len(data) < off:
                data.extend(bytes(off - len(data)))
            data[off:off + len(chunk)] = chunk
        return bytes(data)
