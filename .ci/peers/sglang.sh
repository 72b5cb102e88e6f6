#!/usr/bin/env bash
# SGLang's gateway (sglang-router 0.3.2, the version issue 18 was checked against) in its own venv
# under $KVTUI_PEERS/sglang, for tests/differential/test_sglang_router.py. Idempotent.
set -euo pipefail
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/sglang"
[ -e "$dest/.installed" ] && exit 0
python3 -m venv "$dest"
"$dest/bin/pip" install -q 'sglang-router==0.3.2'
touch "$dest/.installed"
