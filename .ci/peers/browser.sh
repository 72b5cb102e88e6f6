#!/usr/bin/env bash
# Peer "browser": Debian's chromium and Playwright (PyPI, the Python driver only: it never
# downloads a browser of its own) for tests/tui/test_serve_browser.py, which opens `kvtui serve`
# in headless chromium. Idempotent: apt only when /usr/bin/chromium is missing (CI runs as root),
# pip only when $KVTUI_PEERS/browser/.installed is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/browser"
if [ ! -x /usr/bin/chromium ]; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
if [ ! -e "$dest/.installed" ]; then
    rm -rf "$dest" && mkdir -p "$dest"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 .venv/bin/pip install -q --target "$dest/site" 'playwright>=1.50,<2'
    touch "$dest/.installed"
fi
