#!/usr/bin/env bash
# NVIDIA Dynamo 1.6.1's KV router (the Rust core in ai-dynamo-runtime, the Python package without
# its GPU dependencies) in its own venv under $KVTUI_PEERS/dynamo, for
# tests/differential/test_dynamo_router.py. Idempotent.
set -euo pipefail
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/dynamo"
[ -e "$dest/.installed" ] && exit 0
python3 -m venv "$dest"
"$dest/bin/pip" install -q 'ai-dynamo-runtime==1.6.1' pyzmq msgpack
"$dest/bin/pip" install -q --no-deps 'ai-dynamo==1.6.1'
touch "$dest/.installed"
