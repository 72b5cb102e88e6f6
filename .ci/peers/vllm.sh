#!/usr/bin/env bash
# The vLLM peer for tests/differential/test_vllm_pool.py: vLLM 0.33.0's block pool, KV-cache
# utilities and KV-event types, taken from the real wheel, with the pure-Python packages they
# import. Into $KVTUI_PEERS/vllm:
#   wheel/  the wheel (pip download --no-deps: 336 MB, no torch), kept as the cache
#   src/    only the modules the test loads (tests/differential/vllm_peer.py lists them)
#   site/   their real dependencies (msgspec, pyzmq, cbor2), for that Python
# Idempotent: a second run finds .installed and does nothing. The wheel part: .ci/lib/vllm_wheel.sh.
set -euo pipefail
source "$(dirname "$0")/../lib/vllm_wheel.sh"
vllm_wheel_begin vllm 0.33.0
# What the test loads from the wheel; everything else they import is a stub in vllm_peer.py.
vllm_wheel_extract \
  vllm/v1/core/block_pool.py \
  vllm/v1/core/kv_cache_utils.py \
  vllm/distributed/kv_events.py \
  vllm/utils/hashing.py \
  vllm/utils/math_utils.py \
  vllm/v1/kv_cache_spec_registry.py
rm -rf "$DIR/site"
"$PY" -m pip install -q --target "$DIR/site" 'msgspec' 'pyzmq>=25' 'cbor2'
vllm_wheel_done
