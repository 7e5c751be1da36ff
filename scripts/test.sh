#!/usr/bin/env bash
# The one test command (README, .ci/run): sets everything up, runs the check, then every test tier.
#   1. scripts/check.sh          formatter, linter and type checker for Python and TypeScript
#   2. npm run test:unit         TypeScript unit tests (node's test runner, vscode mocked at one seam)
#   3. pytest                    core, agent (real debugpy sessions), server (pytest-lsp over stdio), doctor, packaging
#                                (the wheel in fresh venvs of 3.11/3.12/3.13), benchmarks smoke; Python 3.11 with torch;
#                                on three pytest-xdist workers (a module per worker), with --durations=25, so every run
#                                shows where the time goes
#   4. pytest (torch debugger)  the debugger-facing tests (TORCH_DEBUGGER_TESTS_3_X: the first-NaN stop, stop_in_frame,
#                                conditions, hidden frames, forked workers, untraced hooks) with torch under Python 3.12
#                                and 3.13, where pydevd runs on sys.monitoring (PEP 669) instead of sys.settrace
#                                (scripts/setup.sh torch-pythons makes .venvs/torch3.X); a missing one is skipped with
#                                a message. Run beside 3 (each to its own log, printed when it ends): both mostly wait
#                                on child processes, so 2 cores carry them together.
#   5. pytest -m timing          the tests that bound a wall time (a latency, a sleep's length), left out of 3 and 4 and
#                                run alone after them, under the dev .venv and each torch Python
#   6. pytest -m numpy_only      the agent and core tests that need no torch, under Python 3.10, 3.12 and 3.13 (each
#                                found on the machine; scripts/setup.sh numpy-only makes .venvs/py3.X); a missing one
#                                is skipped with a message
#   7. npm run test:e2e          real VS Code (code-server) in headless Chromium, with the built .vsix installed
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
  tests/agent/sentinel/test_first_nan_families_dap.py
  tests/agent/sentinel/test_spanish_stop_dap.py
  tests/agent/debugger
  tests/agent/conditions/test_breakpoints_dap.py
)
TORCH_DEBUGGER_TESTS_3_13=(
  tests/agent/sentinel/test_sentinel_dap.py
  tests/agent/sentinel/test_first_nan_every_run_dap.py
  tests/agent/sentinel/test_first_nan_families_dap.py
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

# ---- side by side: the main pytest tier and the torch debugger tiers ------------------------------------------------
# Both mostly wait on child processes (debuggees, adapters, servers), so on 2 cores they share the machine well. Each
# runs with its output going to its own log only; this shell prints a tier's log, its time and its tally when the tier
# ends, so the output stays one tier at a time. Tests marked ``timing`` (they bound a wall time) are left out here and
# run alone afterwards (the timing tier), so the other tiers' load cannot fail them.
# the dev .venv's pytest-asyncio option is unknown to the torch venvs' plain pytest: not a problem, not a warning
TORCH_PYTEST=(-m pytest -p no:cacheprovider -W ignore::pytest.PytestConfigWarning)

run_logged() { # run_logged LOG COMMAND...: the command's output to LOG, then "RC SECONDS" to LOG.done
  local log=$1 began=$SECONDS rc; shift
  "$@" >"$log" 2>&1; rc=$?
  echo "$rc $((SECONDS - began))" >"$log.done"
}

pending_names=(); pending_logs=(); pending_pids=()
trap 'kill "${pending_pids[@]}" 2>/dev/null; exit 130' INT TERM
start_logged() { # start_logged NAME LOG COMMAND...: runs in the background
  local name=$1 log=$2; shift 2
  rm -f "$log" "$log.done"
  echo "== $name: started (its output is printed when it ends)"
  run_logged "$log" "$@" &
  pending_names+=("$name"); pending_logs+=("$log"); pending_pids+=($!)
}
finish_logged() { # finish_logged INDEX: prints the tier's log, tallies it and records its time
  local name=${pending_names[$1]} log=${pending_logs[$1]} rc took
  wait "${pending_pids[$1]}" 2>/dev/null  # reaped already when two tiers share one background lane
  read -r rc took <"$log.done"
  echo "== $name (ended)"
  cat "$log"
  tally_pytest "$name" "$rc" "$log"
  times+=("$name ${took}s"); echo "[test] $name took ${took}s"
}
wait_all_logged() { # prints each background tier as soon as it ends, in the order they end
  local left=${#pending_names[@]} i
  local -a printed=()
  while [ "$left" -gt 0 ]; do
    for i in "${!pending_names[@]}"; do
      [ -n "${printed[$i]:-}" ] && continue
      if [ ! -f "${pending_logs[$i]}.done" ] && ! kill -0 "${pending_pids[$i]}" 2>/dev/null; then
        sleep 1  # its lane is gone: a result written just now, or none (killed), which is a failure
        [ -f "${pending_logs[$i]}.done" ] || {
          echo "[test] ${pending_names[$i]} ended without a result (killed?)" >>"${pending_logs[$i]}"
          echo "1 0" >"${pending_logs[$i]}.done"
        }
      fi
      if [ -f "${pending_logs[$i]}.done" ]; then
        finish_logged "$i"; printed[$i]=1; left=$((left - 1))
      fi
    done
    [ "$left" -gt 0 ] && sleep 2
  done
  pending_names=(); pending_logs=(); pending_pids=()
}

# The main tier runs on three pytest-xdist workers, a test module per worker at a time (``--dist loadfile``: a module's
# fixtures, such as the doctor runs the realistic suite shares, are made once): its tests mostly wait on their child
# processes, so three workers keep two cores busy (about 2x faster than one, measured).
MAIN_WORKERS=3
start_logged pytest test-output/pytest.log \
  .venv/bin/python -m pytest -p no:cacheprovider -m "not timing" -n "$MAIN_WORKERS" --dist loadfile --durations=25

torch_versions=()
for version in 3.12 3.13; do
  if [ ! -x ".venvs/torch$version/bin/python" ]; then
    echo "[test] no .venvs/torch$version (scripts/setup.sh torch-pythons; Python $version not on this machine?):" \
      "its torch debugger tier is skipped"
    continue
  fi
  torch_versions+=("$version")
done
torch_lane() { # the torch tiers one after the other (each is itself a debugger-heavy run), beside the main tier
  local version selection
  for version in "${torch_versions[@]}"; do
    selection="TORCH_DEBUGGER_TESTS_${version/./_}[@]"
    run_logged "test-output/pytest-torch$version.log" \
      ".venvs/torch$version/bin/python" "${TORCH_PYTEST[@]}" -m "not timing" "${!selection}"
  done
}
if [ ${#torch_versions[@]} -gt 0 ]; then
  for version in "${torch_versions[@]}"; do rm -f "test-output/pytest-torch$version.log"*; done
  torch_lane &
  lane=$!
  for version in "${torch_versions[@]}"; do
    echo "== pytest-torch$version (Python $version with torch, debugger tests on sys.monitoring): started"
    pending_names+=("pytest-torch$version"); pending_logs+=("test-output/pytest-torch$version.log")
    pending_pids+=("$lane")
  done
fi
wait_all_logged

# ---- alone: what bounds a wall time, then the quick numpy-only tiers -------------------------------------------------
tier_start "timing (tests that bound a wall time, run with nothing beside them)"
.venv/bin/python -m pytest -p no:cacheprovider -m timing --durations=25 2>&1 | tee test-output/pytest-timing.log
rc=${PIPESTATUS[0]}
for version in "${torch_versions[@]}"; do
  # the torch selections' own timing tests, under that Python (exit 5: its selection holds none)
  selection="TORCH_DEBUGGER_TESTS_${version/./_}[@]"
  log="test-output/pytest-torch$version-timing.log"
  ".venvs/torch$version/bin/python" "${TORCH_PYTEST[@]}" -m timing "${!selection}" 2>&1 | tee "$log"
  torch_rc=${PIPESTATUS[0]}
  if [ "$torch_rc" -ne 5 ]; then tally_pytest "timing-torch$version" "$torch_rc" "$log"; fi
done
tally_pytest timing "$rc" test-output/pytest-timing.log
tier_end timing

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
