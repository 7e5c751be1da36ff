"""``tensorsight doctor --png DIR``: the viewer's picture of the first NaN's tensors written as PNG files beside the
report (listed as ``pictures`` in ``--json``), with the NaN values in the NaN colour; nothing written without NaN."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.paths import PYHELPERS, PYTHON, example
from support.png import decode_png, nan_pixels


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", *args], capture_output=True, text=True, env=env, timeout=240
    )


def test_the_first_nan_tensor_is_drawn_as_a_png(tmp_path: Path) -> None:
    done = doctor("--json", "--png", str(tmp_path / "pictures"), example("nan_from_data.py"))
    document = json.loads(done.stdout)
    assert any(f["kind"] == "nonfinite" for f in document["findings"])
    output = str(tmp_path / "pictures" / "first-nonfinite-output.png")
    assert output in document["pictures"]
    pixels = decode_png(Path(output).read_bytes())
    assert nan_pixels(pixels).any()


def test_a_clean_run_writes_no_picture(tmp_path: Path) -> None:
    script = tmp_path / "clean.py"
    script.write_text("import torch\nprint(float(torch.ones(3).sum()))\n")
    done = doctor("--json", "--png", str(tmp_path / "pictures"), str(script))
    assert json.loads(done.stdout)["pictures"] == []
    assert not (tmp_path / "pictures").exists() or not list((tmp_path / "pictures").iterdir())
