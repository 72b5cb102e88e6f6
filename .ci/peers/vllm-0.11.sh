#!/usr/bin/env bash
# The second vLLM peer, for tests/live/: vLLM 0.11.0's KV-event publisher, the last form before
# vLLM's May 2026 change (vllm #42892) whose events are positional arrays (`array_like=True`).
# Only vllm/distributed/kv_events.py is taken from the wheel; tests/live/vllm_publishers.py loads
# it beside the 0.33.0 peer (.ci/peers/vllm.sh: its site/ supplies msgspec and pyzmq). Into
# $KVTUI_PEERS/vllm-0.11: wheel/ (pip download --no-deps, ~440 MB, kept as the cache), src/.
# Idempotent: a second run finds .installed and does nothing.
set -euo pipefail
VERSION=0.11.0
DIR="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/vllm-0.11"
PY="${PYTHON:-$(dirname "$0")/../../.venv/bin/python}"
[ -x "$PY" ] || PY=python3
if [ -f "$DIR/.installed" ] && [ "$(cat "$DIR/.installed")" = "$VERSION" ]; then
  echo "vllm-0.11 peer: $VERSION already in $DIR"; exit 0
fi
mkdir -p "$DIR/wheel"
WHEEL=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$WHEEL" ]; then
  "$PY" -m pip download -q --no-deps "vllm==$VERSION" -d "$DIR/wheel"
  WHEEL=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl | head -1)
fi
rm -rf "$DIR/src"
mkdir -p "$DIR/src"
"$PY" - "$WHEEL" "$DIR/src" <<'PYEOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    wheel.extract("vllm/distributed/kv_events.py", sys.argv[2])
PYEOF
echo "$VERSION" > "$DIR/.installed"
echo "vllm-0.11 peer: $VERSION installed in $DIR"
