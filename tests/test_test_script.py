"""scripts/test.sh's bookkeeping, on a scratch copy of the repository's layout whose interpreters are stand-ins: the
tiers run side by side are each printed whole when they end, every tier's time is printed, the closing line adds up
every tier, and a tier that failed, ran no test or lost its background lane makes the script fail.

Each stand-in ``python`` prints what pytest prints for the selection (``-m``) it is given, so the test also pins which
interpreter runs which selection: the timing tests alone after the others, the torch tiers without them.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

# What each stand-in prints and exits with, by venv and selection (an unexpected pair exits 3 and names itself).
FAKE_PYTHON = r"""#!/usr/bin/env bash
who=$(basename "$(dirname "$(dirname "$0")")"); selection=""; previous=""
for arg in "$@"; do
  [ "$previous" = "-m" ] && [ "$arg" != pytest ] && selection=$arg
  previous=$arg
done
echo "[$who] $*"
case "$who|$selection" in
  ".venv|not timing") sleep 1; echo "a test printing 99 passed"; echo "===== 5 passed, 1 skipped in 1.01s =====";;
  ".venv|timing") echo "===== 2 passed, 9 deselected in 0.50s =====";;
  "torch3.12|not timing")
    [ -n "${LOSE_LANE:-}" ] && kill -9 "$PPID"
    echo "===== 1 failed, 2 passed in 0.20s ====="; exit 1;;
  "torch3.13|not timing") echo "===== 3 passed in 0.10s =====";;
  "torch3.12|timing") echo "===== 1 passed, 7 deselected in 0.10s =====";;
  "torch3.13|timing") echo "===== 4 deselected in 0.10s ====="; exit 5;;
  "py3.10|numpy_only") echo "===== 6 deselected in 0.10s ====="; exit 5;;
  *) echo "unexpected $who|$selection"; exit 3;;
esac
"""


def scratch_copy(root: Path) -> Path:
    """scripts/test.sh beside stand-ins for set-up and check, a dev .venv, two torch venvs and one numpy-only venv."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy(Path(REPO) / "scripts" / "test.sh", root / "scripts" / "test.sh")
    (root / "scripts" / "setup.sh").write_text("#!/usr/bin/env bash\nexit 0\n")
    (root / "scripts" / "check.sh").write_text("#!/usr/bin/env bash\necho 'check: ok'\n")
    for venv in (".venv", ".venvs/torch3.12", ".venvs/torch3.13", ".venvs/py3.10"):
        (root / venv / "bin").mkdir(parents=True)
        (root / venv / "bin" / "python").write_text(FAKE_PYTHON)
    for path in [*root.rglob("*.sh"), *root.rglob("python")]:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return root


def run_test_script(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / "scripts" / "test.sh")],
        cwd=root,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="scripts/test.sh is a bash script")
def test_tiers_side_by_side_are_printed_whole_and_counted_once_each(tmp_path):
    result = run_test_script(scratch_copy(tmp_path))
    out = result.stdout
    assert result.returncode == 1, out  # torch3.12 failed and py3.10 ran no test
    assert "unexpected" not in out, out

    # the main tier (without the timing tests, with its durations) and the torch tiers start together ...
    started = out.index("== pytest: started")
    assert started < out.index("== pytest-torch3.12") < out.index("== pytest (ended)"), out
    assert "[.venv] -m pytest -p no:cacheprovider -m not timing -n 3 --dist loadfile --durations=25" in out
    assert re.search(r"\[torch3\.12\] -m pytest .* -m not timing tests/agent/sentinel", out), out
    # ... and each is printed whole when it ends, its log kept apart
    main_block = out[out.index("== pytest (ended)") :].split("[test] pytest took")[0]
    assert "5 passed, 1 skipped" in main_block and "torch3" not in main_block, main_block
    assert "1 failed, 2 passed" in (tmp_path / "test-output" / "pytest-torch3.12.log").read_text()

    # the timing tests run after every side-by-side tier ended; a torch selection holding none is no tier
    timing = out.index("== timing")
    assert timing > max(out.index(f"[test] {name} took") for name in ("pytest", "pytest-torch3.12", "pytest-torch3.13"))
    assert "[.venv] -m pytest -p no:cacheprovider -m timing --durations=25" in out[timing:]
    assert "timing-torch3.13" not in out

    assert "[test] pytest-torch3.12 exited with 1" in out
    assert "[test] pytest-py3.10 ran no test" in out
    tier_times = out.split("tier times: ")[1].splitlines()[0]
    for name in ("check", "pytest", "pytest-torch3.12", "pytest-torch3.13", "timing", "pytest-py3.10"):
        assert re.search(rf"(^|, ){re.escape(name)} \d+s", tier_times), tier_times
    # 5 + 2 + 3 + 1 passed (timing-torch3.12) + 2 (torch3.12); the "99 passed" a test printed is not counted
    assert out.rstrip().splitlines()[-1] == "13 passed, 1 failed", out


@pytest.mark.skipif(shutil.which("bash") is None, reason="scripts/test.sh is a bash script")
def test_a_background_lane_that_dies_without_a_result_fails_its_tiers(tmp_path):
    result = run_test_script(scratch_copy(tmp_path), LOSE_LANE="1")
    out = result.stdout
    assert result.returncode == 1, out
    assert "[test] pytest-torch3.13 ended without a result (killed?)" in out, out
    assert "[test] pytest-torch3.13 ran no test" in out, out
    # the main tier beside it still ends and is counted
    assert "[test] pytest took" in out and "5 passed, 1 skipped" in out, out
