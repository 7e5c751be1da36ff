"""The NaN sentinel without a debugger: `python -m tensorsight doctor --json` reports the birth as a `nonfinite`
finding at the user's line (the examples' `# @nan` lines), with step, phase and rank, and the sentinel leaves the
program's state (RNG stream, buffers) exactly as an unobserved run would."""

import json
import os
import socket
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON, REPO, example, marked_lines, program

# example -> (phase, op, step or None when it depends on float dynamics)
EXAMPLES = {
    "nan_lr_too_high.py": ("forward", None, None),
    "nan_log_zero.py": ("forward", "torch.log", None),
    "nan_sqrt_backward.py": ("backward", "torch.sqrt", 3),
    "nan_overflow_inf.py": ("forward", "torch.exp", 4),
    "nan_from_data.py": ("data", "torch.as_tensor", 3),
}


def doctor(path, *args, env=None, timeout=180):
    environment = {**os.environ, "PYTHONPATH": PYHELPERS, **(env or {})}
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", path, *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def nonfinite_findings(completed):
    document = json.loads(completed.stdout)
    return [f for f in document["findings"] if f["kind"] == "nonfinite"]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_doctor_reports_the_birth_at_the_marked_line(name):
    phase, op, step = EXAMPLES[name]
    path = example(name)
    completed = doctor(path)
    assert completed.returncode == 1, completed.stderr  # an error finding
    findings = nonfinite_findings(completed)
    assert len(findings) == 1, findings  # the first birth only: everything after it is its consequence
    finding = findings[0]
    assert finding["severity"] == "error"
    assert finding["file"] == path
    assert finding["line"] == marked_lines(path, "@nan")[""]
    assert finding["details"]["phase"] == phase
    assert f"— {phase}" in finding["message"]
    assert f"step {finding['step']}" not in finding["message"], "the step is a field, said once by whoever shows it"
    if op is not None:
        assert finding["details"]["op"] == op
    if step is not None:
        assert finding["step"] == step
    counts = finding["details"]
    assert counts["nan"] + counts["posinf"] + counts["neginf"] > 0
    assert "rank" not in finding  # not a distributed run
    assert "[tensorsight] " in completed.stderr and finding["message"] in completed.stderr  # the console line


def test_replays_leave_the_program_state_untouched(tmp_path):
    """The birth happens inside a module with BatchNorm and Dropout, so the sentinel replays that forward; the
    program must end in the same state as without TensorSight (same RNG stream, same running statistics)."""
    path = program("sentinel_guest.py")
    plain, observed = tmp_path / "plain.json", tmp_path / "observed.json"
    subprocess.run([PYTHON, path, str(plain)], check=True, cwd=REPO, timeout=120)
    completed = doctor(path, str(observed))
    findings = nonfinite_findings(completed)
    assert [(f["line"], f["step"], f["details"]["op"]) for f in findings] == [
        (marked_lines(path, "@nan")[""], 2, "torch.sqrt")
    ]
    assert findings[0]["details"]["replayed"] is True and "in Scorer" in findings[0]["message"]
    assert json.loads(observed.read_text()) == json.loads(plain.read_text())


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_findings_carry_the_torch_distributed_rank():
    path = program("sentinel_ranks.py")
    base = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    environment = {**os.environ, "PYTHONPATH": PYHELPERS, **base}
    ranks = [
        subprocess.Popen(
            [PYTHON, "-m", "tensorsight", "doctor", "--json", path],
            cwd=REPO,
            env={**environment, "RANK": str(rank)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [process.communicate(timeout=180) for process in ranks]
    findings = [[f for f in json.loads(out)["findings"] if f["kind"] == "nonfinite"] for out, _ in outputs]
    assert findings[0] == [], "rank 0 divides by nothing: no birth there"
    (finding,) = findings[1]
    assert finding["rank"] == 1 and finding["step"] == 2
    assert finding["line"] == marked_lines(path, "@nan")[""]
    assert "rank 1" not in finding["message"], "the rank is a field"
    assert "rank 1" in outputs[1][1]  # the console line says it


def test_a_gradient_born_outside_modules_points_at_the_forward_line():
    path = program("sentinel_outside_backward.py")
    lines = marked_lines(path, "@")  # "@nan" and "@backward"
    (finding,) = nonfinite_findings(doctor(path))
    assert (finding["line"], finding["step"]) == (lines["nan"], 2)
    assert finding["details"]["phase"] == "backward" and finding["details"]["node"] == "SqrtBackward0"
    assert f"found when backward() returned, at sentinel_outside_backward.py:{lines['backward']}" in finding["message"]


def plain_and_observed(tmp_path, name):
    """Run a state-reporting test program plainly and under the doctor; return (plain state, observed state,
    nonfinite findings)."""
    path = program(name)
    plain, observed = tmp_path / "plain.json", tmp_path / "observed.json"
    subprocess.run([PYTHON, path, str(plain)], check=True, cwd=REPO, timeout=120)
    findings = nonfinite_findings(doctor(path, str(observed)))
    return json.loads(plain.read_text()), json.loads(observed.read_text()), findings


def test_the_program_sees_the_same_state_warnings_and_subclass_calls(tmp_path):
    """A replay inside a model with an EMA attribute, a call counter and a list; a tensor subclass and warnings
    outside it: everything the program can observe of itself is identical to a plain run."""
    plain, observed, findings = plain_and_observed(tmp_path, "guest_state.py")
    path = program("guest_state.py")
    lines = marked_lines(path, "@")
    assert [(f["line"], f["step"], f["details"]["op"]) for f in findings] == [(lines["nan"], 2, "torch.log")]
    assert findings[0]["details"]["replayed"] is True
    assert observed == plain
    # the comparison is meaningful: the program saw its state change, its subclass called, its warnings
    assert plain["calls"] == 4 and len(plain["history"]) == 4 and plain["ema_version"] > 0
    assert plain["subclass_calls"] > 0
    assert plain["warnings"] == [
        ["UserWarning", path, lines["torch_warning"]],
        ["UserWarning", path, lines["user_warning"]],
    ]


def test_a_forward_with_side_effects_outside_its_module_is_not_replayed(tmp_path):
    plain, observed, findings = plain_and_observed(tmp_path, "guest_uncontained.py")
    (finding,) = findings
    assert finding["line"] == marked_lines(program("guest_uncontained.py"), "@call")[""]
    assert finding["details"]["op"] == "(not replayed)" and finding["step"] == 2
    assert "Logged.forward assigns the global variable CALLS" in finding["message"]
    assert observed == plain and plain["calls"] == 3


INF_FROM_WORKERS = r"""
import torch
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, index):
        row = torch.full((4,), float(index % 7))
        if index == 200:
            row = torch.log(row - 4.0)  # log(0) = -Inf, made in a DataLoader worker
        return row, index % 2


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for features, labels in DataLoader(Rows(), batch_size=32, num_workers=2):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(features), labels)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_an_inf_made_in_a_dataloader_worker_is_reported_when_the_batch_arrives(tmp_path):
    """A -Inf made in a DataLoader worker (not watched op by op) is found when the parent receives the batch: at the
    ``for`` line, as data that came in, naming the dataset code that made it; not later, as a NaN "born" in the
    linear layer it reaches."""
    path = tmp_path / "inf_from_workers.py"
    path.write_text(INF_FROM_WORKERS)
    completed = doctor(str(path))
    findings = nonfinite_findings(completed)
    assert len(findings) == 1, completed.stdout + completed.stderr
    (finding,) = findings
    lines = INF_FROM_WORKERS.splitlines()
    loop = next(i for i, text in enumerate(lines, start=1) if text.lstrip().startswith("for features, labels in"))
    getitem = next(i for i, text in enumerate(lines, start=1) if "def __getitem__" in text)
    assert finding["line"] == loop
    assert finding["details"]["phase"] == "data" and finding["details"]["op"] == "(DataLoader batch)"
    assert finding["details"]["neginf"] == 4 and finding["details"]["nan"] == 0
    assert f"made by Rows.__getitem__ at inf_from_workers.py:{getitem}, in 2 worker processes" in finding["message"]
    assert finding["message"].startswith("Inf came in here") and "from finite inputs" not in finding["message"]


INF_WRITTEN_INTO_FEATURES = r"""
import torch


def main():
    torch.manual_seed(0)
    features = torch.randn(256, 4)
    features[200] = float("-inf")  # a sentinel value for "missing", written in
    labels = torch.randint(0, 2, (256,))
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for start in range(0, 256, 32):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(features[start : start + 32]), labels[start : start + 32])
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_nan_made_from_an_inf_written_into_the_data_names_that_inf(tmp_path):
    """A -Inf written into the features reaches the model, whose linear layer turns it into NaN: the finding is at
    the model call and says what the inputs held, never "from finite inputs"."""
    path = tmp_path / "inf_written_in.py"
    path.write_text(INF_WRITTEN_INTO_FEATURES)
    completed = doctor(str(path))
    findings = nonfinite_findings(completed)
    assert len(findings) == 1, completed.stdout + completed.stderr
    (finding,) = findings
    lines = INF_WRITTEN_INTO_FEATURES.splitlines()
    assert finding["line"] == next(i for i, text in enumerate(lines, start=1) if "loss = " in text)
    assert "from inputs holding 4 -Inf" in finding["message"], finding["message"]
    assert "from finite inputs" not in finding["message"]
