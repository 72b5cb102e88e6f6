"""When the interactive app crashes: exit non-zero, and keep the traceback in a file.

Textual catches an exception raised inside the app itself (`App._handle_exception`), stops
the driver -- which puts the terminal back: main screen, cursor, echo -- prints its own rendering
of the traceback to stderr, and returns from `App.run()` normally, leaving `App.return_code`
at 1 and the exception in `App._exception` (textual/app.py, 8.x). Nothing of that makes the
process fail, so the CLI checks `return_code` after `run()` and turns a crash into exit 1
with one line naming a file that holds the full traceback and the versions, for a bug report.
An exception that escapes `run()` itself (raised before the app or its driver started) gets
the same file.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback

from kvtui import __version__
from kvtui.cli.boundary import REPORT_HINT


def write_crash_report(error: BaseException | None, argv: list[str]) -> str | None:
    """Write the traceback and the versions to a new file in the temp directory; its path.

    None if even that fails (a full disk): the caller still exits non-zero.
    """
    try:
        import textual

        textual_version = textual.__version__
    except Exception:  # noqa: BLE001 - a version string is a courtesy
        textual_version = "unknown"
    lines = [
        f"kvtui {__version__} crashed at {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        f"command: kvtui {' '.join(argv)}",
        f"python {platform.python_version()} on {platform.platform()}, textual {textual_version}",
        "",
    ]
    if error is None:
        lines.append("the app exited with a failure code but kept no exception")
    else:
        lines.extend(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        fd, path = tempfile.mkstemp(prefix="kvtui-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(line.rstrip("\n") for line in lines) + "\n")
    except OSError:
        return None
    return path


def report_crash(error: BaseException | None, argv: list[str]) -> int:
    """Say where the traceback went; the exit code of a crashed app (1: a bug in kvtui)."""
    path = write_crash_report(error, argv)
    what = f"{type(error).__name__}: {str(error)[:200]}" if error is not None else "the app failed"
    if path:
        print(f"kvtui: the app crashed ({what}); the traceback is in {path} -- this is a bug in kvtui, "
              "please report it with that file", file=sys.stderr)
    else:
        print(f"kvtui: the app crashed ({what}) and the traceback could not be saved -- {REPORT_HINT}", file=sys.stderr)
    return 1
