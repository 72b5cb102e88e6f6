#!/usr/bin/env bash
# SGLang's KV-event classes (python/sglang/srt/disaggregation/kv_events.py) in two versions, for
# tests/live/test_live_sglang_real.py: 0.5.10 (positional events, `array_like=True`, with `medium`)
# and 0.5.23 (tagged maps, with `cache_salt`, `session_id`, `lora_name`). Each wheel goes, without
# its dependencies (torch, triton: its engine cannot run here), into its own folder under
# $KVTUI_PEERS/sglang-events; the venv there has only what that module imports (msgspec, pyzmq,
# pydantic). tests/live/sglang_events_side.py loads the module alone. Idempotent.
set -euo pipefail
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/sglang-events"
[ -e "$dest/.installed" ] && exit 0
python3 -m venv "$dest"
"$dest/bin/pip" install -q msgspec pyzmq pydantic
for version in 0.5.10 0.5.23; do
    "$dest/bin/pip" install -q --no-deps --target "$dest/sglang-$version" "sglang==$version"
done
touch "$dest/.installed"
