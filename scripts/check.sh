#!/usr/bin/env bash
# The one check command for both languages: ruff format + ruff lint + mypy (Python), then `npm run check`
# (prettier, eslint --max-warnings=0, tsc --noEmit) when the extension's tooling is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
$PY -m ruff format --check pyhelpers tests benchmarks examples scripts
$PY -m ruff check pyhelpers tests benchmarks examples scripts
$PY -m mypy
if [ -f package.json ] && npm run | grep -q "^  check$"; then
  npm run --silent check
fi
echo "check: ok"
