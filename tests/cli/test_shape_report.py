"""``python -m tensorsight shapes``: the shape map of a script's model, as the editor's command calls it."""

import json
import os
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON, REPO, example, program


def shapes(*args: str) -> tuple[int, dict | str, str]:
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "shapes", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        cwd=REPO,
        timeout=120,
    )
    out: dict | str = json.loads(proc.stdout) if "--json" in args else proc.stdout
    return proc.returncode, out, proc.stderr


def test_json_maps_the_first_model_with_parameters_and_stops_the_script():
    code, doc, stderr = shapes("--json", program("two_models.py"))
    assert code == 0 and isinstance(doc, dict)
    assert doc["model"] == "Linear"  # the first module with parameters called from user code
    assert "SCRIPT KEPT RUNNING" not in stderr
    code, doc, stderr = shapes("--json", "--model", "model", program("two_models.py"))
    assert code == 0 and isinstance(doc, dict) and "SCRIPT KEPT RUNNING" not in stderr
    assert doc["model"] == "AutoEncoder" and doc["file"] == program("two_models.py")
    rows = {row["path"]: row for row in doc["rows"]}
    assert set(rows) == {
        "",
        "encoder",
        "encoder.layers",
        "encoder.layers.0",
        "encoder.layers.1",
        "encoder.layers.2",
        "decoder",
    }
    root = rows[""]
    assert root["input_shapes"] == [[32, 16]] and root["output_shapes"] == [[32, 16]] and root["dtype"] == "float32"
    assert root["params"] == root["trainable"] == (16 * 8 + 8) + (8 * 4 + 4) + (4 * 16 + 16)
    assert rows["encoder.layers.2"]["output_shapes"] == [[32, 4]] and rows["encoder.layers.2"]["depth"] == 3
    assert rows["decoder"]["memory_bytes"] == 32 * 16 * 4 + (4 * 16 + 16) * 4
    assert rows["encoder"]["line"] == rows["decoder"]["line"] - 1  # the forward lines that call them
    # the texts the editor's table shows, written by core.notation
    assert root["module"] == "AutoEncoder" and rows["encoder.layers.2"]["module"] == "encoder.layers.2 (Linear)"
    assert root["input_text"] == "[32, 16]" and root["output_text"] == "f32[32, 16]"
    assert rows["decoder"]["memory_text"] == "2.3 KiB"  # 32*16*4 + 80*4 = 2368 bytes
    assert doc["totals"] == {
        "params": root["params"],
        "trainable": root["trainable"],
        "memory_bytes": sum(row["memory_bytes"] for row in doc["rows"]),
        "memory_text": doc["totals"]["memory_text"],
    }
    assert doc["totals"]["memory_text"].endswith("KiB")
    assert set(root) >= {
        "path",
        "type",
        "input_shapes",
        "output_shapes",
        "dtype",
        "params",
        "trainable",
        "memory_bytes",
    }


@pytest.mark.parametrize("name", ["Encoder", "self.encoder"])
def test_model_by_class_or_attribute_name(name):
    code, doc, _ = shapes("--json", "--model", name, program("two_models.py"))
    assert code == 0 and isinstance(doc, dict)
    assert doc["model"] == "Encoder"
    assert [row["path"] for row in doc["rows"]] == ["", "layers", "layers.0", "layers.1", "layers.2"]


def test_a_failing_forward_gives_partial_rows_and_the_explanation():
    code, doc, _ = shapes("--json", example("bug_shape_error.py"))
    assert code == 1 and isinstance(doc, dict)
    rows = {row["path"]: row for row in doc["rows"]}
    assert rows["features"]["output_shapes"] == [[64, 16, 7, 7]]
    assert rows["classifier"]["output_shapes"] == []
    assert "model.classifier" in doc["error"] and doc["finding"]["kind"] == "shape"


def test_text_table_and_missing_model():
    code, out, _ = shapes(example("bug_shapes.py"))
    assert code == 0 and isinstance(out, str)
    assert "Shape map of Sequential" in out and "f32[64, 32]" in out and "Total params: 321" in out
    code, doc, _ = shapes("--json", "--model", "NoSuchModel", example("bug_shapes.py"))
    assert code == 1 and isinstance(doc, dict) and doc["rows"] == []
    assert doc["error"] == "the script finished without a module named NoSuchModel"
