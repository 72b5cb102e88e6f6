"""The paths a command reads and writes: only regular files, never one of its own inputs.

Why one module: issue 25's campaign found each command guarding its paths differently (or not
at all): `plot` read /dev/zero until memory ran out and blocked forever on a fifo, `run --json
SCENARIO` overwrote the scenario it had just read, and a `--json` into a missing directory failed
only after the whole run. Every check here runs before any work starts, and every open is made
with O_NONBLOCK (a fifo opens at once instead of waiting for a writer) and checked with fstat
before a byte is read, so a special file costs one system call, not a hang.
"""

from __future__ import annotations

import os
import stat
import tempfile

from kvtui.errors import InputError

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a fifo"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words, for the refusal message."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def check_input(path: str, what: str = "input", directory_ok: bool = False) -> None:
    """Refuse, before anything runs, an input that is missing or not a regular file (a symlink
    to a regular file is fine: reading through it changes nothing)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError.one(path, None, f"cannot read the {what}: {e.strerror}") from None
    if stat.S_ISREG(st.st_mode) or (directory_ok and stat.S_ISDIR(st.st_mode)):
        return
    raise InputError.one(path, None, f"cannot read the {what}: it is {file_kind(st.st_mode)}, not a regular file")


def check_output(path: str, inputs: list[str], what: str = "output") -> None:
    """Refuse, before anything runs, an output path that cannot take a regular file: a directory,
    a special file, a missing or non-directory parent, or one of the command's own inputs."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError.one(path, None, f"cannot write the {what}: the directory {parent} does not exist")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise InputError.one(path, None, f"cannot write the {what}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError.one(path, None, f"cannot write the {what}: it is {file_kind(st.st_mode)}, not a regular file; give a file path")
    for source in inputs:
        if _same_file(path, source):
            raise InputError.one(path, None, f"cannot write the {what}: it is an input of this command ({source}); give another path")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def open_regular(path: str, what: str = "file"):
    """`path` opened for reading bytes, or None when it does not exist; refused when it is not a
    regular file (checked on the open descriptor, so nothing can swap it in between)."""
    try:
        fd = _open_checked(path, os.O_RDONLY, f"cannot read the {what}")
    except FileNotFoundError:
        return None
    return os.fdopen(fd, "rb")


def open_append(path: str, what: str = "file"):
    """`path` opened for appending text, created if missing; never through a symlink and never
    onto a special file (so an append cannot land in someone else's file or block)."""
    fd = _open_checked(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, f"cannot write the {what}")
    return os.fdopen(fd, "a", encoding="utf-8")


def _open_checked(path: str, flags: int, failure: str) -> int:
    """A descriptor on the regular file `path` (no symlink followed, no fifo waited on), else
    InputError `path: failure: reason`; FileNotFoundError passes through."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise InputError.one(path, None, f"{failure}: {_reason(path, e)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError.one(path, None, f"{failure}: it is {file_kind(mode)}, not a regular file")
    return fd


def _reason(path: str, e: OSError) -> str:
    """O_NOFOLLOW on a symlink fails with ELOOP ("too many levels"): say what it really is."""
    if os.path.islink(path):
        return "it is a symbolic link, not a regular file"
    return e.strerror or str(e)

def write_output(path: str, text: str, what: str) -> None:
    """Write `text` to `path` atomically, and only ever as a regular file.

    A temporary file in the same directory is written, fsynced and renamed over the target,
    so a reader sees the old file or the new one, never half of one. A target that exists and
    is not a regular file -- a symlink, a fifo, a device, a directory -- is refused: renaming
    over it would silently replace it (the fuzz campaign of issue 10 found exactly that).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InputError.one(path, None, f"cannot write {what}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = file_kind(st.st_mode)
        raise InputError.one(path, None, f"cannot write {what}: it is {kind}, not a regular file; give a file path")
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise InputError.one(path, None, f"cannot write {what}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
