"""Where the differential suites find the real systems they run beside kvtui.

Each peer is installed by `.ci/peers/NAME.sh` into `$KVTUI_PEERS/NAME` (default
`~/.cache/kvtui-peers`, outside the checkout so a clean clone reuses it). A test asks for its
peer with `require(NAME)`: when the peer is missing the test is skipped on a developer's machine
and fails under CI (`CI=true`), where `.ci/run` has just installed it.

Size knob: `KVTUI_DIFF_SCALE` (default 1, the CI size) multiplies the number of cases per pair;
run with e.g. `KVTUI_DIFF_SCALE=20` by hand (>= 10,000 cases per pair) before resolving.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SCALE = float(os.environ.get("KVTUI_DIFF_SCALE", "1"))


def root() -> Path:
    return Path(os.environ.get("KVTUI_PEERS", str(Path.home() / ".cache" / "kvtui-peers")))


def cases(ci_size: int) -> int:
    """The number of cases for a pair: `ci_size` at scale 1."""
    return max(1, int(ci_size * SCALE))


def require(name: str) -> Path:
    """The peer's install directory, or skip (fail under CI) when `.ci/peers/NAME.sh` has not run."""
    path = root() / name
    if (path / ".installed").exists():
        return path
    message = f"peer {name!r} is not installed: run `bash .ci/peers/{name}.sh`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
