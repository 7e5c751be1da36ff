"""``tensorsight.show(x)`` in a real ipykernel (driven through jupyter_client, tests/support/jupyter_kernel.py): the
cell's result carries an ``image/png`` with the NaN cell in the NaN colour, and an ``text/html`` caption with the
exact counts, as a notebook front end receives them."""

from __future__ import annotations

import base64
from pathlib import Path

import jupyter_client  # noqa: F401 - a test dependency the numpy-only tiers lack: tests/conftest.py then leaves this out
import pytest

from support.jupyter_kernel import Kernel
from support.paths import PYHELPERS, PYTHON
from support.png import decode_png, nan_pixels

pytestmark = pytest.mark.subprocess

CELL = """\
import torch, tensorsight
x = torch.randn(32, 48)
x[3, 4] = float("nan")
tensorsight.show(x)
"""


def test_show_renders_a_png_in_the_cell_result(tmp_path: Path) -> None:
    with Kernel.start(PYTHON, tmp_path, extra_env={"PYTHONPATH": PYHELPERS}) as kernel:
        msg_id = kernel.submit(CELL)
        reply, _ = kernel.finish(msg_id, timeout=120)
        assert reply["status"] == "ok", reply
        (result,) = [
            m for m in kernel._iopub if m["msg_type"] == "execute_result" and m["parent_header"].get("msg_id") == msg_id
        ]
    data = result["content"]["data"]
    pixels = decode_png(base64.b64decode(data["image/png"]))
    assert nan_pixels(pixels).any()
    assert "NaN×1" in data["text/html"]
