# Sourced by run.sh and counterfactual.sh: the two vLLM CPU engines both scripts watch, started
# one way (ports 18100+i for the API, 18200+i for KV events, 18300+i for replay; block 32, 48 KV
# blocks each). Needs ENGINE_PY (the peer venv's python) and WORK (model and logs) set.

start_engines() {  # engines already answering are reused
  for i in 0 1; do
    curl -sf "http://127.0.0.1:$((18100 + i))/health" > /dev/null && continue
    VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=nobind HF_HUB_OFFLINE=1 \
    "$ENGINE_PY" -m vllm.entrypoints.openai.api_server --model "$WORK/model" --served-model-name tiny \
      --host 127.0.0.1 --port $((18100 + i)) --max-model-len 512 --block-size 32 --num-gpu-blocks-override 48 \
      --enable-prefix-caching --enable-prompt-tokens-details \
      --kv-events-config "{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:$((18200 + i))\", \"replay_endpoint\": \"tcp://*:$((18300 + i))\", \"topic\": \"kv\"}" \
      > "$WORK/engine$i.log" 2>&1 &
    echo $! > "$WORK/engine$i.pid"
  done
  until curl -sf http://127.0.0.1:18100/health > /dev/null && curl -sf http://127.0.0.1:18101/health > /dev/null; do sleep 5; done
}

stop_engines() {  # and wait until both are gone (their ports free, their caches with them)
  for i in 0 1; do kill "$(cat "$WORK/engine$i.pid")" 2>/dev/null || true; done
  while curl -sf http://127.0.0.1:18100/health > /dev/null || curl -sf http://127.0.0.1:18101/health > /dev/null; do sleep 1; done
  sleep 2
}
