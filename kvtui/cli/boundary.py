"""The one error boundary of the `kvtui` command: every exception -> one message and an exit code.

Exit 2 means "the input, or the environment the user controls, is wrong" (a scenario, a trace,
a WAL directory, the command line, a file that cannot be read or written, a permission, a log
another process holds, a machine out of memory); the user can fix it, so it is said in one line
per problem and never as a traceback. Exit 1 means a bug in kvtui: one line naming the
exception, and a hint to report it. `KVTUI_DEBUG=1` prints the traceback as well, for both.

Mapping by class rather than catching at each call site keeps the promise checkable in one
place: the fuzz tests call `main()` and fail on any exit other than 0/1/2 or any traceback.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback

from kvtui.errors import InputError

REPORT_HINT = "this is a bug in kvtui; please report it with the command line (KVTUI_DEBUG=1 shows the traceback)"


def debug_enabled() -> bool:
    return os.environ.get("KVTUI_DEBUG", "") not in ("", "0")


def os_error_message(e: OSError) -> str:
    """`path: reason` for an OSError, with the path(s) it carries (the store's and ours do)."""
    reason = e.strerror or (errno.errorcode.get(e.errno, "") if e.errno else "") or str(e) or type(e).__name__
    paths = [p for p in (e.filename, e.filename2) if p is not None]
    where = " -> ".join(os.fsdecode(p) if isinstance(p, bytes) else str(p) for p in paths)
    return f"{where}: {reason}" if where else f"{type(e).__name__}: {reason}"


def classify(e: BaseException) -> tuple[int, str]:
    """(exit code, message) for an exception that reached `main()`."""
    from kvtui.cli.common import UsageError
    from kvtui.store.report import RecoveryError
    from kvtui.store.wal import WALError

    if isinstance(e, UsageError):
        return 2, str(e)
    if isinstance(e, InputError):
        return 2, e.render()
    if isinstance(e, (WALError, RecoveryError)):  # a held lock, a failed disk, a damaged log
        return 2, f"kvtui: {e}"
    if isinstance(e, OSError):
        return 2, f"kvtui: {os_error_message(e)}"
    if isinstance(e, MemoryError):
        return 2, ("kvtui: out of memory: the scenario asks for more than this machine has "
                   "(`kvtui validate` prints an estimate)")
    first = str(e).splitlines()[0] if str(e) else ""
    return 1, f"kvtui: internal error: {type(e).__name__}" + (f": {first[:300]}" if first else "") + f" -- {REPORT_HINT}"


def report(e: BaseException) -> int:
    """Print the message (and the traceback under KVTUI_DEBUG=1); return the exit code."""
    code, message = classify(e)
    if debug_enabled():
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    try:
        print(message, file=sys.stderr)
    except (OSError, ValueError):  # stderr itself is gone; the exit code still tells
        pass
    return code
