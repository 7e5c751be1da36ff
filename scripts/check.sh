#!/usr/bin/env bash
# The one check command for both languages: ruff format + ruff lint + mypy (Python), the generated TypeScript
# contract is current, then `npm run check`
# (prettier, eslint --max-warnings=0, tsc --noEmit) when the extension's tooling is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
has_npm_script() { [ -f package.json ] && node -e "process.exit(require('./package.json').scripts?.[process.argv[1]] ? 0 : 1)" "$1"; }
PY=.venv/bin/python
$PY -m ruff format --check pyhelpers tests benchmarks examples scripts
$PY -m ruff check pyhelpers tests benchmarks examples scripts
$PY -m mypy
$PY scripts/generate_protocol_ts.py --check  # extension/src/server/protocol.ts is generated from core/protocol/
if has_npm_script check; then
  npm run --silent check
fi
echo "check: ok"
