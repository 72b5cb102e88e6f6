#!/usr/bin/env bash
# The compiled engine (issue 23, condition 2): .ci/run's pytest ran the pure build; this builds
# the checkout compiled in place (KVTUI_COMPILE=1, setup.py), checks that kvtui says so, runs the
# whole suite again against it (the compiled-vs-pure differential must not skip), and puts the
# pure build back for the checks after it, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."
trap '.venv/bin/pip install -q --no-deps -e .' EXIT
KVTUI_COMPILE=1 .venv/bin/pip install -q --no-deps -e .
# not `tee /dev/stderr`: when CI's output goes to a file, tee reopens it truncated and the log before is lost
version="$(.venv/bin/kvtui --version)"
echo "$version"
grep -q "engine: compiled" <<<"$version"
KVTUI_EXPECT_COMPILED=1 .venv/bin/python -m pytest
