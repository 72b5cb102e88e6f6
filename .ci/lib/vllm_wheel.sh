# Sourced by the vLLM peers (.ci/peers/vllm.sh, vllm-0.11.sh): the part they share, a vLLM
# wheel downloaded once (pip download --no-deps, no torch) and only the named modules taken
# out of it. Not a peer itself (.ci/run runs .ci/peers/*.sh only).
#
#   vllm_wheel_begin NAME VERSION   sets DIR ($KVTUI_PEERS/NAME) and PY; exits the peer script
#                                   (status 0) when VERSION is installed there already
#   vllm_wheel_extract MODULE...    the wheel (cached in DIR/wheel/) -> DIR/src/, afresh
#   vllm_wheel_done                 marks DIR installed (DIR/.installed holds VERSION)

vllm_wheel_begin() {
  NAME=$1
  VERSION=$2
  DIR="${KVTUI_PEERS:-$HOME/.cache/kvtui-peers}/$NAME"
  PY="${PYTHON:-$(dirname "${BASH_SOURCE[0]}")/../../.venv/bin/python}"
  [ -x "$PY" ] || PY=python3
  if [ -f "$DIR/.installed" ] && [ "$(cat "$DIR/.installed")" = "$VERSION" ]; then
    echo "$NAME peer: $VERSION already in $DIR"
    exit 0
  fi
}

vllm_wheel_extract() {
  local wheel
  mkdir -p "$DIR/wheel"
  wheel=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    "$PY" -m pip download -q --no-deps "vllm==$VERSION" -d "$DIR/wheel"
    wheel=$(ls "$DIR"/wheel/vllm-"$VERSION"-*.whl | head -1)
  fi
  rm -rf "$DIR/src"
  mkdir -p "$DIR/src"
  "$PY" -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in sys.argv[3:]:
        wheel.extract(name, sys.argv[2])' "$wheel" "$DIR/src" "$@"
}

vllm_wheel_done() {
  echo "$VERSION" > "$DIR/.installed"
  echo "$NAME peer: $VERSION installed in $DIR"
}
