#!/usr/bin/env bash
# Idempotent set-up for a fresh machine. Usage: scripts/setup.sh [python|numpy-only|torch-pythons|node|e2e|all]  (default: all)
#   python: .venv with the pinned test/check requirements (torch pinned to the local CPU build)
#   numpy-only: .venvs/py3.10, py3.12, py3.13 (each Python found on the machine) for the tests that need no torch
#   torch-pythons: .venvs/torch3.12, torch3.13 with torch for the debugger tests on sys.monitoring (pydevd >= 3.12)
#   node:   npm dependencies and the built extension (out/, extension/bundled/libs, the .vsix)
#   e2e:    Debian Chromium, Node 24 and code-server under .tools/ for the real-VS-Code tests and the demo
set -euo pipefail
cd "$(dirname "$0")/.."
has_npm_script() { [ -f package.json ] && node -e "process.exit(require('./package.json').scripts?.[process.argv[1]] ? 0 : 1)" "$1"; }
ROOT=$(pwd)
what=${1:-all}

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

setup_python() {
  if [ ! -x .venv/bin/python ]; then
    log "creating .venv"
    python3 -m venv .venv
  fi
  local stamp=.venv/.requirements-dev.sha
  local want; want=$(sha256sum scripts/requirements-dev.txt | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "pip install -r scripts/requirements-dev.txt"
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -r scripts/requirements-dev.txt
    echo "$want" > "$stamp"
  fi
}

# Prints a working python<version> (a pyenv shim of an unselected version fails, so each candidate must run).
find_python() {
  local version=$1 candidate
  for candidate in "$(command -v "python$version" 2>/dev/null)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/"python$version"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    if [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$version" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

NUMPY_ONLY_VERSIONS="3.10 3.12 3.13"

setup_numpy_only() {
  local version python venv want
  want=$(sha256sum scripts/requirements-numpy-only.txt | cut -d' ' -f1)
  for version in $NUMPY_ONLY_VERSIONS; do
    venv=.venvs/py$version
    if ! python=$(find_python "$version"); then
      log "python$version not found: its numpy-only test tier will be skipped"
      continue
    fi
    [ -x "$venv/bin/python" ] || { log "creating $venv"; "$python" -m venv "$venv"; }
    if [ "$(cat "$venv/.requirements.sha" 2>/dev/null)" != "$want" ]; then
      log "pip install -r scripts/requirements-numpy-only.txt ($venv)"
      "$venv/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements-numpy-only.txt
      echo "$want" > "$venv/.requirements.sha"
    fi
  done
}

TORCH_VERSIONS="3.12 3.13"

# Venvs of their own, not the numpy-only ones: those tiers test the agent where torch cannot be imported.
# The torch venvs are large (torch's CUDA build and its nvidia-* wheels, about 5 GB each): they are made once per
# machine in a store outside the clone, keyed by the requirements' hash, and each clone's .venvs/torch3.X links to it,
# so a fresh clone on the same machine (CI's) sets up in a moment and a changed pin makes a new one.
TORCH_VENV_STORE="${TENSORSIGHT_VENV_STORE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorsight/venvs}"

setup_torch_pythons() {
  local version python venv want shared
  want=$(sha256sum scripts/requirements-torch-pythons.txt | cut -d' ' -f1)
  for version in $TORCH_VERSIONS; do
    venv=.venvs/torch$version
    if ! python=$(find_python "$version"); then
      log "python$version not found: its torch debugger tier will be skipped"
      continue
    fi
    shared="$TORCH_VENV_STORE/torch$version-${want:0:16}"
    if [ "$(cat "$shared/.requirements.sha" 2>/dev/null)" != "$want" ]; then
      log "creating $shared and pip install -r scripts/requirements-torch-pythons.txt (torch's wheels are large)"
      rm -rf "$shared"
      mkdir -p "$TORCH_VENV_STORE"
      "$python" -m venv "$shared"
      "$shared/bin/python" -m pip install -q --disable-pip-version-check --cache-dir "$TORCH_VENV_STORE/pip-cache" \
        -r scripts/requirements-torch-pythons.txt
      echo "$want" > "$shared/.requirements.sha"
    fi
    if [ "$(readlink "$venv" 2>/dev/null)" != "$shared" ]; then
      mkdir -p .venvs
      rm -rf "$venv"
      ln -s "$shared" "$venv"
    fi
  done
}

setup_node() {
  if [ -f package.json ]; then
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      log "npm ci"
      if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
    fi
    if has_npm_script build; then
      log "npm run build"
      npm run --silent build
    fi
  fi
}

setup_e2e() {
  [ -x scripts/setup-e2e.sh ] && scripts/setup-e2e.sh
  return 0
}

case "$what" in
  python) setup_python ;;
  numpy-only) setup_numpy_only ;;
  torch-pythons) setup_torch_pythons ;;
  node) setup_node ;;
  e2e) setup_e2e ;;
  all) setup_python; setup_numpy_only; setup_torch_pythons; setup_node; setup_e2e ;;
  *) echo "usage: scripts/setup.sh [python|numpy-only|torch-pythons|node|e2e|all]" >&2; exit 2 ;;
esac
