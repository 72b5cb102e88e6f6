#!/usr/bin/env bash
# The second vLLM peer, for tests/live/: vLLM 0.11.0's KV-event publisher, the last form before
# vLLM's May 2026 change (vllm #42892) whose events are positional arrays (`array_like=True`).
# Only vllm/distributed/kv_events.py is taken from the wheel; tests/live/vllm_publishers.py loads
# it beside the 0.33.0 peer (.ci/peers/vllm.sh: its site/ supplies msgspec and pyzmq). Into
# $KVTUI_PEERS/vllm-0.11: wheel/ (pip download --no-deps, ~440 MB, kept as the cache), src/.
# Idempotent: a second run finds .installed and does nothing. The wheel part: .ci/lib/vllm_wheel.sh.
set -euo pipefail
source "$(dirname "$0")/../lib/vllm_wheel.sh"
vllm_wheel_begin vllm-0.11 0.11.0
vllm_wheel_extract vllm/distributed/kv_events.py
vllm_wheel_done
