#!/bin/sh
# Regenerate the README's screenshots (deterministic: same code, same files).
cd "$(dirname "$0")/.." && exec python -m kvtui.tui.make_screenshots "$@"
