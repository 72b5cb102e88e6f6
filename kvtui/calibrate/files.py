"""Reading a report's files: JSON and YAML documents, and their numbers, with the house's errors
(`file:line: message`, exit 2), never a traceback, whatever a truncated or foreign file holds."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import yaml

from kvtui.errors import InputError

MAX_BYTES = 512 * 1024 * 1024  # a report bigger than this is not one (a detailed run of 1e6 requests is ~200 MB)


def read_json(path: str) -> Any:
    """A JSON document; InputError naming the line of a syntax error (a truncated file)."""
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise InputError.one(path, None, f"more than {MAX_BYTES:,} bytes: not a benchmark report")
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise InputError.one(path, e.lineno, f"not JSON ({e.msg}; a truncated file?)") from None
    except UnicodeDecodeError:
        raise InputError.one(path, None, "not UTF-8 text: not a benchmark report") from None
    except OSError as e:
        raise InputError.one(path, None, f"cannot read: {e.strerror or e}") from None


def read_yaml(path: str) -> Any:
    """A YAML document (inference-perf's resolved config); InputError for a malformed one."""
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark is not None else None
        raise InputError.one(path, line, f"not YAML: {e.problem}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InputError.one(path, None, f"not YAML: {e}") from None
    except OSError as e:
        raise InputError.one(path, None, f"cannot read: {e.strerror or e}") from None


def dig(doc: Any, path: str, file: str, *keys: str) -> Any:
    """`doc[k1][k2]...`, or InputError naming the missing key (`path` says where in the file)."""
    here = doc
    for key in keys:
        if not isinstance(here, dict) or key not in here:
            where = ".".join((path, *keys[: keys.index(key) + 1])).strip(".")
            raise InputError.one(file, None, f"no {where}: not the report this reader expects")
        here = here[key]
    return here


def number(value: Any, file: str, what: str, low: float = 0.0, high: float = math.inf) -> float:
    """A finite number in [low, high]; InputError otherwise (units that cannot be right)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError.one(file, None, f"{what}: expected a number, got {value!r}")
    if not low <= value <= high:
        raise InputError.one(file, None, f"{what} = {value:g} is outside [{low:g}, {high:g}]: units that cannot be right")
    return float(value)


def optional_int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None
