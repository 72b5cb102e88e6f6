#!/usr/bin/env bash
# Lint: `ruff check` with the rule set chosen in pyproject.toml ([tool.ruff.lint], and why).
# The formatter is configured there too but not enforced: `ruff format` has not been run over
# the tree (other branches were editing it), so `ruff format --check` would fail today.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/ruff check .
