"""core.notation: one spelling of dtypes, shapes and byte sizes, and the proof that every view of one tensor uses it.

The unit tier checks the table against the dtypes the installed torch and numpy really have. The last test runs a
script under the agent (tests/programs/agent_events.py, as the doctor does) and compares, for tensors of tricky
dtypes (quantized, float8, bfloat16, complex, uint16, bool), the Variables line (``tensorsight.summarize``), the
inlay hint text (the ``shape`` event) and the shape map's table row: each names the dtype the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest
import torch

from support.paths import PYHELPERS, PYTHON, program
from tensorsight.core.notation import (
    DTYPE_SHORT_NAMES,
    dtype_name,
    format_bytes,
    format_shape,
    shape_text,
    short_dtype,
)
from tensorsight.core.shapes import ShapeRow, format_shape_table


def _torch_dtypes() -> list[torch.dtype]:
    return sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)


def test_every_torch_dtype_has_a_short_name_and_no_two_share_one():
    dtypes = _torch_dtypes()
    assert len(dtypes) > 30  # the enumeration found torch's dtypes (quantized, float8, sub-byte ints included)
    names = {dtype_name(d) for d in dtypes}
    assert names <= DTYPE_SHORT_NAMES.keys(), names - DTYPE_SHORT_NAMES.keys()
    shorts = [short_dtype(d) for d in dtypes]
    assert len(set(shorts)) == len(set(names)), "two torch dtypes read the same"


def test_every_numpy_scalar_dtype_has_a_short_name():
    dtypes = {np.dtype(t) for t in set(np.sctypeDict.values())}
    fixed = [d for d in dtypes if (d.kind not in "USV" and d.name in DTYPE_SHORT_NAMES) or d.kind in "mMO"]
    assert {d.name for d in fixed} >= {"float16", "float32", "float64", "complex64", "complex128", "bool", "int8"}
    for d in dtypes:
        if d.kind in "mM":  # datetime64/timedelta64 keep their unit, e.g. datetime64[ns]
            continue
        assert short_dtype(d) != "" and (d.kind in "USV" or d.name in DTYPE_SHORT_NAMES), d


def test_table_values_are_unique():
    assert len(set(DTYPE_SHORT_NAMES.values())) == len(DTYPE_SHORT_NAMES)


@pytest.mark.parametrize(
    ("dtype", "short"),
    [
        (torch.float32, "f32"),
        (torch.bfloat16, "bf16"),
        (torch.int64, "i64"),
        (torch.uint16, "u16"),
        (torch.uint64, "u64"),
        (torch.bool, "bool"),
        (torch.complex64, "c64"),
        (torch.complex32, "c32"),
        (torch.qint8, "qi8"),
        (torch.quint4x2, "qu4x2"),
        (torch.float8_e4m3fn, "f8_e4m3fn"),
        (torch.float8_e4m3fnuz, "f8_e4m3fnuz"),  # not the same format as e4m3fn: both must stay apart
        (torch.float8_e5m2, "f8_e5m2"),
        (np.dtype("float32"), "f32"),
        (np.dtype("uint32"), "u32"),
        (np.dtype(np.longdouble), "f" + str(np.dtype(np.longdouble).itemsize * 8)),
        (np.dtype("U8"), "str8"),
        (np.dtype("S16"), "bytes16"),
        (np.dtype([("x", "f4"), ("y", "i8")]), "struct(x, y)"),
        (np.dtype("datetime64[ns]"), "datetime64[ns]"),
        ("float64", "f64"),
        ("torch.int8", "i8"),
        ("weird_type", "weird_type"),  # unknown: shown whole, never guessed
    ],
)
def test_short_dtype(dtype, short):
    assert short_dtype(dtype) == short


def test_dtype_name_is_the_full_name():
    assert dtype_name(torch.float32) == "float32"
    assert dtype_name(np.dtype("int16")) == "int16"
    assert dtype_name(np.dtype([("x", "f4")])) == "void32"  # a numpy dtype's name, not its layout repr
    assert dtype_name("torch.qint8") == "qint8"


@pytest.mark.parametrize(
    ("shape", "dtype", "text"),
    [
        ((64, 16), "torch.float32", "f32[64, 16]"),
        ((), "float64", "f64[]"),
        ((3,), torch.bfloat16, "bf16[3]"),
        ((2, 2), "torch.int64", "i64[2, 2]"),
        ((1,), "torch.bool", "bool[1]"),
        ((4,), "weird_type", "weird_type[4]"),
        ((4, 5), None, "[4, 5]"),
        ((4, 5), "", "[4, 5]"),
        (None, "float32", "f32[?]"),
    ],
)
def test_shape_text(shape, dtype, text):
    assert shape_text(shape, dtype) == text


def test_long_shapes_keep_their_ends():
    assert format_shape(range(2, 40)) == "[2, 3, 4, …(33)…, 38, 39]"
    assert format_shape((1,) * 6) == "[1, 1, 1, 1, 1, 1]"  # six dims always fit
    assert shape_text(range(2, 40), "float16").startswith("f16[2, 3, 4, …")


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 512, 1023, 1536, 4096)] == ["0 B", "512 B", "1023 B", "1.5 KiB", "4.0 KiB"]
    assert format_bytes(400_000_000) == "381.5 MiB"
    assert format_bytes(3 * 1024**3) == "3.0 GiB"
    assert format_bytes(2.5 * 1024**4) == "2.5 TiB"
    assert format_bytes(5 * 1024**5) == "5120.0 TiB"  # the largest unit keeps growing
    assert format_bytes(-2048) == "-2.0 KiB"  # a shrinking size (memory growth per step)
    assert format_bytes(None) == "?"


# ---- one tensor, three views ------------------------------------------------------------------------------------

SCRIPT = textwrap.dedent(
    """
    import torch
    from torch import nn

    from tensorsight.agent.display.presentation import summarize
    from tensorsight.agent.runtime import events

    x = torch.ones(4, 3)
    quantized = torch.quantize_per_tensor(x, 0.5, 0, torch.qint8)
    float8 = x.to(torch.float8_e5m2)
    brain = x.to(torch.bfloat16)
    complex = x.to(torch.complex64)
    unsigned = x.to(torch.uint16)
    flags = x > 0
    done = x.sum()  # a later line, so the line before it is published


    class Quantize(nn.Module):
        def forward(self, x):
            return torch.quantize_per_tensor(x, 0.5, 0, torch.qint8)


    class Cast(nn.Module):
        def __init__(self, dtype):
            super().__init__()
            self.dtype = dtype

        def forward(self, x):
            return x.to(self.dtype)


    class Views(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(3))
            self.quantized = Quantize()
            self.float8 = Cast(torch.float8_e5m2)
            self.brain = Cast(torch.bfloat16)
            self.complex = Cast(torch.complex64)
            self.unsigned = Cast(torch.uint16)
            self.flags = Cast(torch.bool)

        def forward(self, x):
            x = x * self.scale
            return [m(x) for m in (self.quantized, self.float8, self.brain, self.complex, self.unsigned, self.flags)]


    with torch.no_grad():
        Views()(x)
    for name in ("quantized", "float8", "brain", "complex", "unsigned", "flags"):
        value = globals()[name]
        events.emit("test-summary", name=name, dtype=str(value.dtype), line=summarize(value))
    """
)


def test_variables_line_inlay_hint_and_shape_map_name_a_dtype_identically(tmp_path):
    script = tmp_path / "views.py"
    script.write_text(SCRIPT)
    options = {"observeShapes": True, "checkLeakage": False, "measure": False}
    proc = subprocess.run(
        [PYTHON, program("agent_events.py"), json.dumps(options), str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    summaries = {e["name"]: e for e in events if e["type"] == "test-summary"}
    assert len(summaries) == 6
    hints = {e["name"]: e["text"] for e in events if e["type"] == "shape" and e.get("name")}
    (shape_map,) = [e for e in events if e["type"] == "shape-map"]
    rows = {r["path"]: r for r in shape_map["rows"]}
    table = format_shape_table([ShapeRow(**r) for r in shape_map["rows"]]).splitlines()

    for name, summary in summaries.items():
        typed = f"{short_dtype(summary['dtype'])}[4, 3]"
        assert summary["line"].startswith(typed + " "), (name, summary["line"])  # the Variables line
        assert hints[name] == typed  # the inlay hint of the line that assigned it
        assert dtype_name(rows[name]["dtype"]) == dtype_name(summary["dtype"])  # the shape map's row...
        assert any(line.lstrip().startswith(f"{name} (") and typed in line for line in table), table  # ...as printed
