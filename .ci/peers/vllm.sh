#!/usr/bin/env bash
# The vLLM peer for tests/differential/test_vllm_pool.py: vLLM 0.33.0's block pool, KV-cache
# utilities and KV-event types, taken from the real wheel, with the pure-Python packages they
# import. Into $KVTUI_PEERS/vllm:
#   wheel/  the wheel (pip download --no-deps: 336 MB, no torch), kept as the cache
#   src/    only the modules the test loads (tests/differential/vllm_peer.py lists them)
#   site/   their real dependencies (msgspec, pyzmq, cbor2), for that Python
# Idempotent: a second run finds .installed and does nothing.
set -euo pipefail
VERSION=0.33.0
DIR="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/vllm"
PY="${PYTHON:-$(dirname "$0")/../../.venv/bin/python}"
[ -x "$PY" ] || PY=python3
if [ -f "$DIR/.installed" ] && [ "$(cat "$DIR/.installed")" = "$VERSION" ]; then
  echo "vllm peer: $VERSION already in $DIR"; exit 0
fi
mkdir -p "$DIR/wheel"
WHEEL=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$WHEEL" ]; then
  "$PY" -m pip download -q --no-deps "vllm==$VERSION" -d "$DIR/wheel"
  WHEEL=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl | head -1)
fi
rm -rf "$DIR/src" "$DIR/site"
mkdir -p "$DIR/src"
"$PY" - "$WHEEL" "$DIR/src" <<'PYEOF'
import sys, zipfile
# What the test loads from the wheel; everything else they import is a stub in vllm_peer.py.
MODULES = [
    "vllm/v1/core/block_pool.py",
    "vllm/v1/core/kv_cache_utils.py",
    "vllm/distributed/kv_events.py",
    "vllm/utils/hashing.py",
    "vllm/utils/math_utils.py",
    "vllm/v1/kv_cache_spec_registry.py",
]
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in MODULES:
        wheel.extract(name, sys.argv[2])
PYEOF
"$PY" -m pip install -q --target "$DIR/site" 'msgspec' 'pyzmq>=25' 'cbor2'
echo "$VERSION" > "$DIR/.installed"
echo "vllm peer: $VERSION installed in $DIR"
