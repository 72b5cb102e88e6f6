#!/usr/bin/env bash
# What NVIDIA Dynamo 1.6.1's mocker worker needs beyond the `dynamo` peer (.ci/peers/dynamo.sh
# installs ai-dynamo with --no-deps): `python -m dynamo.mocker` imports yaml, msgspec and
# packaging. For tests/live/test_live_dynamo.py, into $KVTUI_PEERS/dynamo-mocker/site (put on
# the mocker's PYTHONPATH by the test), installed with the dynamo venv's pip. Idempotent.
set -euo pipefail
PEERS="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}"
dest="$PEERS/dynamo-mocker"
[ -e "$dest/.installed" ] && exit 0
[ -e "$PEERS/dynamo/.installed" ] || bash "$(dirname "$0")/dynamo.sh"
"$PEERS/dynamo/bin/pip" install -q --target "$dest/site" 'pyyaml>=6,<7' 'msgspec>=0.19' 'packaging>=24'
touch "$dest/.installed"
