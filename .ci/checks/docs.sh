#!/usr/bin/env bash
# Docs: the slow generated blocks of README.md and docs/*.md (the routing tables, the sweep)
# must match what their runs print today (the blog's rerun, benchmarks/blog_rerun.py, is about
# 10 CPU-minutes of them); tests/test_docs.py checks the quick ones.
# After a change that moves figures: python docs/generate.py --write
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python docs/generate.py --check --slow
