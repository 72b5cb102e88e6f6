"""The file layer: every byte the store puts on disk goes through one small object.

Why a layer at all: the store's guarantees are claims about what happens when a process dies
or the machine loses power *between* two file-system operations. Routing every operation
(create, write, fsync, rename, unlink, truncate, directory fsync) through an injectable `fs`
object lets the tests stop the world after operation k, fail a write half way (disk full) or
fail an fsync, and then check what recovery makes of the result — the approach of
FoundationDB's simulation and of the ALICE / CrashMonkey studies of crash consistency. The
fault-injecting twin lives in `kvtui.store.faultfs`.

Conventions the rest of the store relies on:
- `write` / `pwrite` write all of `data` or raise; a short write that cannot make progress is
  an error (`OSError(ENOSPC)`), never silently retried forever.
- `create` always makes a *new* file (an old one of the same name is unlinked first), so a
  leftover temp file never lends its inode to the next attempt.
- `fsync_dir` is separate from `fsync`: a rename or a new file is durable only once its
  directory is synced (POSIX; ext4 and XFS document the same).
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import stat


_datasync = getattr(os, "fdatasync", os.fsync)


def open_regular(path: str, flags: int, mode: int = 0o644) -> int:
    """A descriptor on `path` only if it is a regular file of the directory itself.

    Everything the store opens lives in its own directory and is a regular file it wrote. A
    symlink there could make recovery truncate or the lock note overwrite someone else's file,
    a device (CURRENT -> /dev/zero) would be read until memory runs out, and a fifo would block
    the open forever (issue 25). O_NOFOLLOW and O_NONBLOCK make every such open return at once;
    fstat on the descriptor then refuses what is not a regular file, with the reason.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _not_regular(path, "a symbolic link") from None
        raise
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        raise _not_regular(path, "a directory" if stat.S_ISDIR(st_mode) else "a special file (fifo, device or socket)")
    return fd


def _not_regular(path: str, kind: str) -> OSError:
    return OSError(errno.EINVAL, f"is {kind}, not a regular file; a WAL directory holds only the regular files kvtui writes", path)


class RealFS:
    """The operating system's file system, through `os`. Handles are plain file descriptors."""

    # -- reading (never faulted: recovery must see exactly what is on disk) ------------------

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)  # a dangling symlink is there (and refused when read)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        """A regular file, not a symlink to one (the store never follows a link: open_regular)."""
        return stat.S_ISREG(os.lstat(path).st_mode) if os.path.lexists(path) else False

    def size(self, path: str) -> int:
        return os.lstat(path).st_size

    def read(self, path: str) -> bytes:
        with open(open_regular(path, os.O_RDONLY), "rb", buffering=0) as f:
            return f.read()

    def read_mapped(self, path: str):
        """The file mapped read-only (bytes-like, with `find`), for a read-only walk of a file
        that may be far larger than what is worth holding in memory (a recording with a long
        garbage tail): the pages come and go with the kernel's cache. Never for a file that is
        written while the map lives."""
        with open(open_regular(path, os.O_RDONLY), "rb", buffering=0) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def read_head(self, path: str, n: int) -> bytes:
        with open(open_regular(path, os.O_RDONLY), "rb", buffering=0) as f:
            return f.read(n)

    # -- writing -----------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        os.mkdir(path, 0o755)

    def create(self, path: str) -> int:
        """A new, empty file opened for writing (replacing any file of that name)."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)

    def open_write(self, path: str) -> int:
        """An existing file opened for positioned writes (`pwrite`) and `truncate`."""
        return open_regular(path, os.O_WRONLY)

    def write(self, fd: int, data) -> None:
        """Sequential write (on a file from `create`)."""
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            if n <= 0:  # pragma: no cover - the kernel raises ENOSPC instead in practice
                raise OSError(errno.ENOSPC, "short write")
            view = view[n:]

    def pwrite(self, fd: int, data, offset: int) -> None:
        """Write all of `data` at `offset`."""
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            if n <= 0:  # pragma: no cover
                raise OSError(errno.ENOSPC, "short write")
            view = view[n:]
            offset += n

    def fsync(self, fd: int) -> None:
        """Make a file's data durable. fdatasync where available: it skips timestamps but
        includes the file size, which is all an append-only file needs (etcd and SQLite on
        Linux do the same); directories use `fsync_dir`."""
        _datasync(fd)

    def close(self, fd: int) -> None:
        os.close(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- the single-writer lock --------------------------------------------------------------

    def lock(self, path: str) -> int:
        """An exclusive `flock` on `path` (created if needed); raises BlockingIOError if held.

        flock locks belong to the open file description, so a second open in the same process
        conflicts too, and the kernel drops the lock when the process dies (SIGKILL included):
        no stale lock files to clean up, unlike a pid file.
        """
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        try:  # say who holds it, for the next writer's error message (see lock_holder)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the lock is what matters; the note is a courtesy
        return fd

    def unlock(self, fd: int) -> None:
        os.close(fd)  # closing the description releases the flock


def lock_holder(path: str) -> str:
    """Which process holds the lock at `path`, as words: `process 1234 (kvtui run scenarios/pressure.yaml)`.

    The holder writes its pid into the lock file once it has the flock (`RealFS.lock`); the
    command line comes from /proc where there is one. Best effort: "another process" if the
    file says nothing readable.
    """
    try:
        with open(open_regular(path, os.O_RDONLY), "rb") as f:
            pid = int(f.read(32).split()[0])
    except (OSError, ValueError, IndexError):
        return "another process"
    if pid == os.getpid():
        return f"this process ({pid}), through another open of the log"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = " ".join(f.read(4096).replace(b"\0", b" ").decode("utf-8", "replace").split())
    except OSError:
        cmd = ""
    return f"process {pid}" + (f" ({cmd[:200]})" if cmd else "")


def write_atomic(fs: RealFS, directory: str, name: str, data: bytes, *, sync: bool = True) -> None:
    """Replace `directory/name` by `data` all at once: temp file, fsync, rename, directory fsync.

    A crash at any step leaves either the old file or the new one under `name` (plus, at
    worst, a `name.tmp` that recovery removes) — the recipe SQLite, LevelDB's CURRENT file and
    etcd's snapshotter all use.
    """
    final = os.path.join(directory, name)
    tmp = final + ".tmp"
    fd = fs.create(tmp)
    try:
        fs.write(fd, data)
        if sync:
            fs.fsync(fd)
    finally:
        fs.close(fd)
    fs.rename(tmp, final)
    if sync:
        fs.fsync_dir(directory)
