"""A NaN/Inf that numpy made before training is reported where numpy made it: the doctor names the line of numpy's
floating-point warning ("divide by zero encountered in log"), not only the line that turned the array into a tensor
(``torch.from_numpy``, which no TorchFunctionMode sees, or ``torch.as_tensor``), and numpy's warning itself is shown
exactly as in a plain run.

The programs are written the way tabular regression scripts are: argparse and ``main()``, a dataset class in its own
module that converts its arrays once in ``__init__``, a DataLoader, a log-transformed price target."""

import json
import os
import re
import subprocess
import warnings

from support.paths import PYHELPERS, PYTHON

DATASET = """
import numpy as np
import torch
from torch.utils.data import Dataset


def load_table(rows=600, seed=3):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 5)).astype(np.float32)
    price = np.exp(features @ np.array([0.3, -0.2, 0.1, 0.05, 0.4], dtype=np.float32)) + 0.5
    price[rng.random(rows) < 0.03] = 0.0  # not sold yet
    return features, price.astype(np.float32)


class Table(Dataset):
    def __init__(self, features, target):
        self.features = torch.from_numpy(features)
        self.target = torch.from_numpy(target).unsqueeze(1)  # @convert

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index], self.target[index]
"""

TRAIN = """
import argparse

import numpy as np
import torch
import torch.nn as nn
from table import Table, load_table
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    features, price = load_table()
    target = {target}  # @made
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(Table(features, target), batch_size=64, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {{epoch}} loss: {{loss.item():.4f}}")


if __name__ == "__main__":
    main()
"""


def write(folder, target):
    (folder / "table.py").write_text(DATASET)
    script = folder / "train.py"
    script.write_text(TRAIN.format(target=target))
    return script


def marked(text, mark):
    return next(i for i, line in enumerate(text.splitlines(), start=1) if line.endswith(f"# {mark}"))


def run(script, *doctor):
    command = [PYTHON, "-m", "tensorsight", "doctor", "--json", str(script)] if doctor else [PYTHON, str(script)]
    return subprocess.run(
        command,
        cwd=script.parent,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        capture_output=True,
        text=True,
        timeout=180,
    )


def nonfinite(completed):
    return [f for f in json.loads(completed.stdout)["findings"] if f["kind"] == "nonfinite"]


def numpy_warnings_shown(stderr):
    return re.findall(r"^(\S+:\d+): RuntimeWarning: (.*)$", stderr, re.MULTILINE)


def test_a_log_of_zero_in_numpy_is_reported_at_the_numpy_line(tmp_path):
    script = write(tmp_path, "np.log(price)")
    completed = run(script, "doctor")
    findings = nonfinite(completed)
    assert len(findings) == 1, completed.stdout + completed.stderr
    (finding,) = findings
    assert (finding["file"], finding["line"]) == (str(script), marked(script.read_text(), "@made"))
    details = finding["details"]
    assert details["phase"] == "data" and details["op"] == "torch.from_numpy"
    assert details["neginf"] > 0 and details["nan"] == 0
    assert details["converted_at"] == f"table.py:{marked(DATASET, '@convert')}"
    assert 'numpy warned "divide by zero encountered in log"' in finding["message"]
    assert finding["message"].startswith("Inf came in here")
    # the loss curve's verdict points at the data, not at the learning rate
    (dynamics,) = [f for f in json.loads(completed.stdout)["findings"] if f["kind"] == "dynamics"]
    assert dynamics["details"]["cause"] == "data" and dynamics["severity"] == "info"
    # numpy's own warning is shown as without TensorSight: same file, line and words
    plain = run(script)
    assert numpy_warnings_shown(completed.stderr) == numpy_warnings_shown(plain.stderr) != []


def test_an_invalid_value_names_the_line_that_made_the_nan(tmp_path):
    script = write(tmp_path, "np.sqrt(price - 1.0)")
    (finding,) = nonfinite(run(script, "doctor"))
    assert finding["line"] == marked(script.read_text(), "@made")
    assert finding["details"]["nan"] > 0
    assert 'numpy warned "invalid value encountered in sqrt"' in finding["message"]


def test_without_a_numpy_warning_the_conversion_is_the_place(tmp_path):
    """numpy silenced (``np.errstate``): nothing says where the -Inf was made; the tensor's construction is reported."""
    script = write(tmp_path, "np.log(np.where(price > 0, price, 0.0)) if np.seterr(divide='ignore') else None")
    (finding,) = nonfinite(run(script, "doctor"))
    assert (os.path.basename(finding["file"]), finding["line"]) == ("table.py", marked(DATASET, "@convert"))
    assert "numpy warned" not in finding["message"] and "converted_at" not in finding["details"]


def test_a_clean_log_transform_gets_no_nonfinite_finding(tmp_path):
    script = write(tmp_path, "np.log1p(price)")
    completed = run(script, "doctor")
    assert nonfinite(completed) == [], completed.stdout


def test_the_warning_hook_shows_every_warning_unchanged(monkeypatch, tmp_path):
    """In process: with the listener installed, ``catch_warnings(record=True)`` records the same warnings; a warning
    from outside the user's files is not taken as an origin; a NaN is matched to an invalid value, not to a division
    by zero."""
    import numpy as np

    from tensorsight.agent.sentinel import numpy_warnings
    from tensorsight.core.nonfinite import NonFiniteCounts

    monkeypatch.setattr(warnings, "_showwarnmsg", warnings._showwarnmsg)
    monkeypatch.setattr(numpy_warnings, "_installed", [False])
    monkeypatch.setattr(numpy_warnings, "_seen", [])
    numpy_warnings.install()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.log(np.zeros(2))
    assert [str(w.message) for w in caught] == ["divide by zero encountered in log"]
    numpy_warnings.forget()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        warnings.warn_explicit("divide by zero encountered in log", RuntimeWarning, "<string>", 3)
    assert numpy_warnings.origin(NonFiniteCounts(neginf=1)) is None  # not a user's file
    user = tmp_path / "prepare.py"
    user.write_text("import numpy as np\n\ndef prepare(a):\n    return np.sqrt(a)\n")
    namespace = {}
    exec(compile(user.read_text(), str(user), "exec"), namespace)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        namespace["prepare"](np.array([-1.0]))
    found = numpy_warnings.origin(NonFiniteCounts(nan=1))
    assert found is not None and (found.file, found.line) == (str(user), 4)
    assert numpy_warnings.origin(NonFiniteCounts(neginf=1)) is None  # an invalid value makes NaN, not Inf


def test_nan_that_arithmetic_made_from_an_earlier_inf_goes_back_to_the_line_that_made_the_inf(monkeypatch, tmp_path):
    """``np.log`` of a zero makes -Inf; standardizing the column (``x - mean`` with a mean that is -Inf too) makes
    NaN, with numpy's "invalid value encountered in subtract" at the scaler's line: the NaN's origin is the log's
    line, both named. An invalid value of its own (``np.sqrt(-1)``) stays where numpy warned."""
    import numpy as np

    from tensorsight.agent.sentinel import numpy_warnings
    from tensorsight.core.nonfinite import NonFiniteCounts

    monkeypatch.setattr(warnings, "_showwarnmsg", warnings._showwarnmsg)
    monkeypatch.setattr(numpy_warnings, "_installed", [False])
    monkeypatch.setattr(numpy_warnings, "_seen", [])
    numpy_warnings.install()
    user = tmp_path / "prepare.py"
    user.write_text(
        "import numpy as np\n"
        "\n"
        "def logged(a):\n"
        "    return np.log(a)\n"
        "\n"
        "def standardized(a):\n"
        "    return (a - a.mean()) / a.std()\n"
        "\n"
        "def rooted(a):\n"
        "    return np.sqrt(a)\n"
    )
    namespace: dict = {}
    exec(compile(user.read_text(), str(user), "exec"), namespace)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        standardized = namespace["standardized"](namespace["logged"](np.array([0.0, 1.0, 2.0])))
    assert np.isnan(standardized).any()
    found = numpy_warnings.origin(NonFiniteCounts(nan=int(np.isnan(standardized).sum())))
    assert found is not None and (found.file, found.line) == (str(user), 4)
    assert "divide by zero encountered in log" in found.text and "prepare.py:7" in found.text
    numpy_warnings.forget()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        namespace["rooted"](np.array([-1.0]))
    found = numpy_warnings.origin(NonFiniteCounts(nan=1))
    assert found is not None and (found.file, found.line) == (str(user), 10)
