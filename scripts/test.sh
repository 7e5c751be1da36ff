#!/usr/bin/env bash
# The one test command (README, .ci/run): sets everything up, runs the check, then every test tier.
#   1. scripts/check.sh          formatter, linter and type checker for Python and TypeScript
#   2. npm run test:unit         TypeScript unit tests (node's test runner, vscode mocked at one seam)
#   3. pytest                    core, agent (real debugpy sessions), server (pytest-lsp over stdio), doctor, packaging
#                                (the wheel in fresh venvs of 3.11/3.12/3.13), benchmarks smoke; Python 3.11 with torch
#   4. pytest -m numpy_only      the agent and core tests that need no torch, under Python 3.10, 3.12 and 3.13 (each
#                                found on the machine; scripts/setup.sh numpy-only makes .venvs/py3.X); a missing one
#                                is skipped with a message
#   5. pytest (torch debugger)  the debugger-facing tests (TORCH_DEBUGGER_TESTS_3_X: the first-NaN stop, stop_in_frame,
#                                conditions, hidden frames, forked workers, untraced hooks) with torch under Python 3.12
#                                and 3.13, where pydevd runs on sys.monitoring (PEP 669) instead of sys.settrace
#                                (scripts/setup.sh torch-pythons makes .venvs/torch3.X); a missing one is skipped with
#                                a message
#   6. npm run test:e2e          real VS Code (code-server) in headless Chromium, with the built .vsix installed
# Prints each tier's time and one closing line "N passed, N failed" over all tiers; exits non-zero if any tier failed
# or ran no test.
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
# pytest's closing line ("3 passed, 1 failed, 2 errors in 9.1s"), so a number in a test's own output is never counted
pytest_summary() { grep -E '[0-9]+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed).* in [0-9.]+s' "$1" | tail -1; }
tally_pytest() { # tally_pytest NAME RC LOG: errors count as failures
  local line; line=$(pytest_summary "$3")
  tally "$1" "$2" "$(count <(echo "$line") passed)" \
    "$(( $(count <(echo "$line") failed) + $(count <(echo "$line") error) ))"
}

mkdir -p test-output

# Each tier's wall time, printed when it ends and again in the closing summary.
times=()
tier_started=$SECONDS
tier_start() { echo "== $1"; tier_started=$SECONDS; }
tier_end() { local took=$((SECONDS - tier_started)); times+=("$1 ${took}s"); echo "[test] $1 took ${took}s"; }

# The torch debugger tiers' selection: pydevd's sys.monitoring path meets every debugger-facing feature here (about
# 6-7 min on a loaded 2-core machine). 3.13 runs the same pydevd code as 3.12; what differs is the interpreter (PEP 667's
# f_locals proxy, which the stop's Variables use): it runs the stops, stepping and conditions (about 3 min).
TORCH_DEBUGGER_TESTS_3_12=(
  tests/agent/sentinel/test_sentinel_dap.py
  tests/agent/sentinel/test_first_nan_every_run_dap.py
  tests/agent/sentinel/test_spanish_stop_dap.py
  tests/agent/debugger
  tests/agent/conditions/test_breakpoints_dap.py
)
TORCH_DEBUGGER_TESTS_3_13=(
  tests/agent/sentinel/test_sentinel_dap.py
  tests/agent/sentinel/test_first_nan_every_run_dap.py
  tests/agent/sentinel/test_spanish_stop_dap.py
  tests/agent/debugger/test_pause_dap.py
  tests/agent/debugger/test_stepping_dap.py
  tests/agent/debugger/test_debugger_internals.py
  tests/agent/conditions/test_breakpoints_dap.py
)

tier_start check
scripts/check.sh || { status=1; echo "[test] check failed"; }
tier_end check

if has_npm_script test:unit; then
  tier_start "TypeScript unit tests"
  npm run --silent test:unit 2>&1 | tee test-output/unit.log; rc=${PIPESTATUS[0]}
  tally unit "$rc" "$(grep -Eo '^# pass [0-9]+' test-output/unit.log | grep -Eo '[0-9]+' | tail -1 || echo 0)" \
    "$(grep -Eo '^# fail [0-9]+' test-output/unit.log | grep -Eo '[0-9]+' | tail -1 || echo 0)"
  tier_end unit
fi

tier_start pytest
.venv/bin/python -m pytest -p no:cacheprovider 2>&1 | tee test-output/pytest.log; rc=${PIPESTATUS[0]}
tally_pytest pytest "$rc" test-output/pytest.log
tier_end pytest

for version in 3.10 3.12 3.13; do
  if [ ! -x ".venvs/py$version/bin/python" ]; then
    echo "[test] no Python $version on this machine: its numpy-only tier is skipped"
    continue
  fi
  tier_start "pytest, Python $version (numpy-only tests)"
  log="test-output/pytest-py$version.log"
  ".venvs/py$version/bin/python" -m pytest -p no:cacheprovider -m numpy_only tests/agent tests/core 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  tally_pytest "pytest-py$version" "$rc" "$log"
  tier_end "pytest-py$version"
done

for version in 3.12 3.13; do
  if [ ! -x ".venvs/torch$version/bin/python" ]; then
    echo "[test] no .venvs/torch$version (scripts/setup.sh torch-pythons; Python $version not on this machine?):" \
      "its torch debugger tier is skipped"
    continue
  fi
  tier_start "pytest, Python $version with torch (debugger tests on sys.monitoring)"
  log="test-output/pytest-torch$version.log"
  # the dev .venv's pytest-asyncio option is unknown to this venv's plain pytest: not a problem, not a warning
  selection="TORCH_DEBUGGER_TESTS_${version/./_}[@]"
  ".venvs/torch$version/bin/python" -m pytest -p no:cacheprovider -W ignore::pytest.PytestConfigWarning \
    "${!selection}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  tally_pytest "pytest-torch$version" "$rc" "$log"
  tier_end "pytest-torch$version"
done

if has_npm_script test:e2e; then
  tier_start "end-to-end (code-server + Chromium)"
  npm run --silent test:e2e 2>&1 | tee test-output/e2e.log; rc=${PIPESTATUS[0]}
  tally e2e "$rc" "$(grep -Eo '^# pass [0-9]+' test-output/e2e.log | grep -Eo '[0-9]+' | tail -1 || echo 0)" \
    "$(grep -Eo '^# fail [0-9]+' test-output/e2e.log | grep -Eo '[0-9]+' | tail -1 || echo 0)"
  tier_end e2e
fi

echo
echo "tier times: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g')"
echo "$passed passed, $failed failed"
exit $status
