"""The headless doctor as users run it: ``python -m tensorsight doctor`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess

from support.paths import PYHELPERS, PYTHON, example


def run_doctor(*args: str, timeout: float = 240, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {}), "PYTHONPATH": PYHELPERS}
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_json_report_carries_the_shape_map_of_the_first_forward():
    done = run_doctor("--json", example("correct_training.py"))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # the script's own prints went to stderr
    assert document["findings"] == []
    rows = {row["path"]: row for row in document["shapeMap"]["rows"]}
    assert rows[""]["type"] == "Sequential"
    assert rows["0"]["type"] == "Linear" and rows["0"]["output_shapes"] == [[64, 64]]
    assert rows["2"]["output_shapes"] == [[64, 2]]


def test_text_report_prints_findings_and_the_shape_table():
    done = run_doctor(example("bug_shapes.py"))
    assert "[shape]" in done.stdout
    assert "Shape map of" in done.stdout and "Total params" in done.stdout


def test_static_only_run_does_not_execute_the_script(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import torch\nraise SystemExit('executed')\nbreakpoint()\n")
    done = run_doctor("--json", "--no-run", str(script))
    document = json.loads(done.stdout)
    assert "error" not in document
    assert any(f["line"] == 3 and f["kind"] == "training-logic" for f in document["findings"])


def test_bad_input_gets_a_clear_message_and_status_2(tmp_path):
    missing = run_doctor(str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such script" in missing.stderr
    script = tmp_path / "ok.py"
    script.write_text("print('hi')\n")
    bad_set = run_doctor("--set", "novalue", str(script))
    assert bad_set.returncode == 2 and "KEY=VALUE" in bad_set.stderr


def test_a_script_that_cannot_compile_is_reported_not_crashed(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nx = (\n")
    done = run_doctor("--json", str(script))
    document = json.loads(done.stdout)
    assert done.returncode == 1
    assert "SyntaxError" in document["error"] and "was never closed" in document["error"]


def test_a_folder_is_named_as_a_folder_by_every_command(tmp_path):
    done = run_doctor(str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr and "no such script" not in done.stderr
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    for command in ("shapes", "profile", "overfit"):  # one prelude checks the script for all of them
        other = subprocess.run(
            [PYTHON, "-m", "tensorsight", command, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60
        )
        assert other.returncode == 2 and f"tensorsight {command}: is a directory" in other.stderr, command


def test_a_pep_263_encoding_is_honoured_as_python_does(tmp_path):
    script = tmp_path / "latin.py"
    source = '# -*- coding: latin-1 -*-\nlabel = "café"\nprint(label)\nif label == "tea":\n    breakpoint()\n'
    script.write_bytes(source.encode("latin-1"))
    plain = subprocess.run([PYTHON, str(script)], capture_output=True, text=True, timeout=60)
    done = run_doctor("--json", str(script))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert "error" not in document
    assert plain.stdout == "café\n" and "café\n" in done.stderr  # the script's print, as plain Python printed it
    # the static rules read the same text: the leftover breakpoint() at line 5
    assert any(f["line"] == 5 and f["kind"] == "training-logic" for f in document["findings"])


def test_os_exit_still_gets_the_report_of_what_was_found_before_it(tmp_path):
    script = tmp_path / "hard_exit.py"
    script.write_text(
        "import multiprocessing, os, sys\n"
        "import torch\n"
        "x, y = torch.ones(4, 1), torch.ones(4)\n"
        "loss = torch.nn.functional.mse_loss(x, y)  # silent broadcasting: [4, 1] against [4] is [4, 4]\n"
        "worker = multiprocessing.get_context('fork').Process(target=print, args=('worker',))\n"
        "worker.start(); worker.join()  # a forked child ends with os._exit too: no report from it\n"
        "os._exit(int(sys.argv[1]))\n"
    )
    failed = run_doctor("--json", str(script), "3")
    document = json.loads(failed.stdout)  # exactly one document: the worker printed none
    assert failed.returncode == 1
    assert document["error"] == "script ended the process with os._exit(3)"
    assert [(f["kind"], f["line"]) for f in document["findings"] if f["kind"] == "shape"] == [("shape", 4)]
    clean = run_doctor(str(script), "0")
    assert clean.returncode == 0 and "TensorSight doctor: 1 finding(s)" in clean.stdout and "[shape]" in clean.stdout


def test_max_steps_and_timeout_stop_the_script_with_a_partial_report(tmp_path):
    training = tmp_path / "forever.py"
    training.write_text(
        "import torch\n"
        "model = torch.nn.Linear(2, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "while True:\n"
        "    try:\n"
        "        optimizer.zero_grad()\n"
        "        model(torch.ones(4, 2)).pow(2).mean().backward()\n"
        "        optimizer.step()\n"
        "    except Exception:\n"
        "        pass  # a script's own catch-all must not swallow the stop\n"
    )
    stepped = run_doctor("--json", "--max-steps", "3", str(training))
    document = json.loads(stepped.stdout)
    assert stepped.returncode == 0 and "error" not in document
    assert document["partial"]["reason"] == "max-steps" and document["partial"]["steps"] == 3
    spinning = tmp_path / "spin.py"
    spinning.write_text("while True:\n    pass\n")
    timed = run_doctor("--timeout", "1", str(spinning), timeout=60)
    assert timed.returncode == 0
    assert "(PARTIAL)" in timed.stdout and "stopped after 1 s (--timeout)" in timed.stdout
    # a script that catches the stop and ends by itself: still a partial run
    catching = tmp_path / "catching.py"
    catching.write_text("try:\n    while True:\n        pass\nexcept BaseException:\n    print('caught')\n")
    caught = run_doctor("--json", "--timeout", "1", str(catching), timeout=60)
    assert caught.returncode == 0 and json.loads(caught.stdout)["partial"]["reason"] == "timeout"
    # a script that will not unwind (asleep in C, then swallowing the stop) is ended for it, report first
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text("import time\ntry:\n    time.sleep(3600)\nexcept BaseException:\n    time.sleep(3600)\n")
    ended = run_doctor("--json", "--timeout", "1", str(stubborn), timeout=60)
    document = json.loads(ended.stdout)
    assert ended.returncode == 1 and document["partial"]["reason"] == "timeout"
    assert "did not stop" in document["error"]
    bad = run_doctor("--max-steps", "0", str(spinning))
    assert bad.returncode == 2 and "--max-steps" in bad.stderr


def test_a_log_file_that_cannot_be_opened_keeps_the_measurement(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    one_thread = {"OMP_NUM_THREADS": "1"}  # the data-loading share is measured: no oversubscription on a shared box
    log_file = f"--set=logFile={blocker / 'train.log'}"
    with_log = run_doctor("--json", log_file, example("slow_dataloader.py"), env=one_thread)
    without = run_doctor("--json", example("slow_dataloader.py"), env=one_thread)
    measured = [f for f in json.loads(with_log.stdout)["findings"] if "rule" not in f.get("details", {})]
    baseline = [f for f in json.loads(without.stdout)["findings"] if "rule" not in f.get("details", {})]
    assert [(f["kind"], f["line"]) for f in measured] == [(f["kind"], f["line"]) for f in baseline]
    assert any(f["kind"] == "performance" for f in measured)
    assert "cannot write the training log to" in with_log.stderr and "measuring goes on" in with_log.stderr


RULE_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "rules")
EXPECT_MARK = "# expect: "


def expected_in(folder: str) -> set[tuple[str, int, str]]:
    """(file relative to ``folder``, line, code) of every ``# expect: TSNNN`` mark in the folder's files."""
    found = set()
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as handle:
                    for number, line in enumerate(handle, 1):
                        if EXPECT_MARK in line:
                            found.add((os.path.relpath(path, folder), number, line.split(EXPECT_MARK)[1].split()[0]))
    return found


def static_report(script: str, cwd: str | None = None) -> set[tuple[str, int, str]]:
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    done = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", "--no-run", script],
        capture_output=True, text=True, env=env, timeout=120, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    folder = cwd or os.path.dirname(os.path.abspath(script))
    return {(os.path.relpath(f["file"], folder), f["line"], f["details"]["code"]) for f in document["findings"]}


def test_static_rules_follow_the_script_into_the_project_files_it_imports():
    folder = os.path.join(RULE_FIXTURES, "project_trainer")
    assert static_report(os.path.join(folder, "train.py")) == expected_in(folder)
    assert ("trainer.py", 15, "TS101") in expected_in(folder)  # zero_grad() lost inside the Trainer class


def test_the_clean_project_gets_no_static_finding():
    assert static_report(os.path.join(RULE_FIXTURES, "project_clean", "train.py")) == set()


def test_single_file_programs_for_the_missed_static_cases():
    for name in ("ts102_evaluation_helper_with_dropout.py", "ts104_running_loss_shapes.py"):
        path = os.path.join(RULE_FIXTURES, name)
        assert static_report(path) == {(f, line, code) for f, line, code in expected_in(RULE_FIXTURES) if f == name}


def test_a_package_imported_from_the_working_directory_and_import_cycles(tmp_path):
    """``scripts/train.py`` imports ``project.loop`` (found from the working directory, the project's root); the
    two modules of the package import each other (the cycle ends) and nothing is executed."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "__init__.py").write_text("from .loop import fit\n")
    (tmp_path / "project" / "loop.py").write_text(
        "from . import metrics\n"
        "raise SystemExit('imported')\n"
        "def fit(model, loader, optimizer, criterion):\n"
        "    for x, y in loader:\n"
        "        loss = criterion(model(x), y)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        metrics.history.append(loss)\n"
    )
    (tmp_path / "project" / "metrics.py").write_text("from .loop import fit\nhistory = []\n")
    (tmp_path / "scripts" / "train.py").write_text(
        "import torch\n"
        "from project import fit\n"
        "model = torch.nn.Linear(2, 1)\n"
        "fit(model, [], torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.MSELoss())\n"
    )
    found = static_report(os.path.join("scripts", "train.py"), cwd=str(tmp_path))
    assert found == {(os.path.join("project", "loop.py"), 6, "TS101"), (os.path.join("project", "loop.py"), 8, "TS104")}


def test_project_files_that_are_not_plain_or_too_big_are_left_out(tmp_path):
    """A FIFO named like a module (an open() that would never return) and an oversized generated module are not
    read; the script's own findings still come."""
    os.mkfifo(tmp_path / "engine.py")
    (tmp_path / "generated.py").write_text("x = 1\n" * 400_000 + "breakpoint()\n")  # about 2.4 MB
    (tmp_path / "train.py").write_text("import torch\nimport engine\nimport generated\nbreakpoint()\n")
    assert static_report(str(tmp_path / "train.py")) == {("train.py", 4, "TS110")}
