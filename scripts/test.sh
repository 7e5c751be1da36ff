#!/usr/bin/env bash
# The one test command (README, .ci/run): sets everything up, runs the check, then every test tier.
#   1. scripts/check.sh          formatter, linter and type checker for Python and TypeScript
#   2. npm run test:unit         TypeScript unit tests (node's test runner, vscode mocked at one seam)
#   3. pytest                    core, agent (real debugpy sessions), server (pytest-lsp over stdio), doctor, benchmarks smoke
#   4. npm run test:e2e          real VS Code (code-server) in headless Chromium, with the built .vsix installed
# Prints one closing line "N passed, N failed" over all tiers; exits non-zero if any tier failed or ran no test.
set -uo pipefail
cd "$(dirname "$0")/.."
has_npm_script() { [ -f package.json ] && node -e "process.exit(require('./package.json').scripts?.[process.argv[1]] ? 0 : 1)" "$1"; }
scripts/setup.sh all || { echo "setup failed"; exit 1; }

passed=0; failed=0; status=0
tally() { # tally NAME RC PASSED FAILED
  passed=$((passed + $3)); failed=$((failed + $4))
  if [ "$2" -ne 0 ]; then status=1; echo "[test] $1 exited with $2"; fi
  if [ "$3" -eq 0 ] && [ "$4" -eq 0 ]; then status=1; echo "[test] $1 ran no test"; fi
}
count() { grep -Eo "[0-9]+ $2" "$1" | tail -1 | grep -Eo '^[0-9]+' || echo 0; }

mkdir -p test-output

echo "== check"
scripts/check.sh || { status=1; echo "[test] check failed"; }

if has_npm_script test:unit; then
  echo "== TypeScript unit tests"
  npm run --silent test:unit 2>&1 | tee test-output/unit.log; rc=${PIPESTATUS[0]}
  tally unit "$rc" "$(grep -Eo '^# pass [0-9]+' test-output/unit.log | grep -Eo '[0-9]+' | tail -1 || echo 0)" \
    "$(grep -Eo '^# fail [0-9]+' test-output/unit.log | grep -Eo '[0-9]+' | tail -1 || echo 0)"
fi

echo "== pytest"
.venv/bin/python -m pytest -p no:cacheprovider 2>&1 | tee test-output/pytest.log; rc=${PIPESTATUS[0]}
tally pytest "$rc" "$(count test-output/pytest.log passed)" "$(count test-output/pytest.log failed)"

if has_npm_script test:e2e; then
  echo "== end-to-end (code-server + Chromium)"
  npm run --silent test:e2e 2>&1 | tee test-output/e2e.log; rc=${PIPESTATUS[0]}
  tally e2e "$rc" "$(grep -Eo '^# pass [0-9]+' test-output/e2e.log | grep -Eo '[0-9]+' | tail -1 || echo 0)" \
    "$(grep -Eo '^# fail [0-9]+' test-output/e2e.log | grep -Eo '[0-9]+' | tail -1 || echo 0)"
fi

echo
echo "$passed passed, $failed failed"
exit $status
