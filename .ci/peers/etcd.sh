#!/usr/bin/env bash
# etcd for tests/differential/test_etcd_raft.py: Debian's etcd-server (3.4.23, what issue 34's
# probe ran) when no `etcd` is on PATH, and the aetcd 1.0.0 client (etcd3 fails with protobuf >= 4)
# in its own venv under $KVTUI_PEERS/etcd. Idempotent; CI runs as root.
set -euo pipefail
dest="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/etcd"
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server >/dev/null
fi
[ -e "$dest/.installed" ] && exit 0
python3 -m venv "$dest"
"$dest/bin/pip" install -q 'aetcd==1.0.0'
touch "$dest/.installed"
