"""The script runner the headless commands and the agent's profiling share (agent/runtime/script_runner.py): a user's
script runs as ``__main__`` with its own ``sys.argv`` and folder on ``sys.path``, and the outcome says how it ended;
what it leaves of the process (``sys.argv``, ``sys.path``) is put back."""

import sys

from tensorsight.agent.runtime import script_runner


def test_a_script_runs_as_main_with_its_own_arguments_and_folder(tmp_path):
    helper = tmp_path / "helper_module_for_runner.py"
    helper.write_text("VALUE = 41\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\nfrom helper_module_for_runner import VALUE\n"
        "assert __name__ == '__main__'\n"
        "print('args', sys.argv[1:], VALUE + 1)\n"
        "sys.exit(3)\n"
    )
    argv, path = list(sys.argv), list(sys.path)
    outcome = script_runner.run_script(str(script), ["--lr", "0.1"])
    assert outcome.error == "script exited with status 3" and not outcome.stopped
    assert (sys.argv, sys.path) == (argv, path)
    sys.modules.pop("helper_module_for_runner", None)


def test_an_error_in_the_script_is_its_outcome_not_ours(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("def main():\n    raise ValueError('bad batch')\n\nmain()\n")
    outcome = script_runner.run_script(str(script), [])
    assert "ValueError" in outcome.error and "bad batch" in outcome.error
    assert isinstance(outcome.exception, ValueError)
