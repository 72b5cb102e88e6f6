#!/usr/bin/env bash
# Types: mypy on kvtui/ ([tool.mypy] in pyproject.toml) may not gain errors over the committed
# baseline (.ci/checks/mypy-baseline.txt), and a shrunk count must be recorded; see
# .ci/checks/mypy_baseline.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python .ci/checks/mypy_baseline.py
