"""Bad input gets a truthful summary, never an exception, a warning, or a change to the program's state.

In-process first (fast, every child walked in every context), then the same values under a real debugpy session,
where the debuggee itself verifies afterwards that values, ``_version``, the autograd graph, both RNG states and
its ``__torch_function__`` counter are untouched.
"""

import os
import re
import subprocess
import warnings

import numpy as np
import pytest
import torch

from programs.bad_values import bad_values, calls
from support.dap import DebugSession
from support.paths import PYHELPERS, PYTHON, marked_lines, program
from tensorsight.agent.display.children import child_entries
from tensorsight.agent.display.presentation import present, summarize
from tensorsight.agent.display.reading import Group

# The exact line each bad input must read as: what can be said, and why the rest cannot.
EXPECTED = {
    "meta": "f32[1000, 1000] meta (meta tensor: shape only, no data)",
    "coo": "f32[10, 10] cpu sparse_coo nnz=2 μ=0.02 σ=0.317 [-1, 3]",
    "csr": "f32[10, 10] cpu sparse_csr nnz=2 μ=0.02 σ=0.317 [-1, 3]",
    "quantized": "qi8[20] cpu scale=0.5 zero_point=0 μ=0.125 σ=0.759 [-1, 1]",
    "complex_values": "c64[12] cpu ⚠ NaN×4 μ=1.5+0j σ=1.2 |z|∈[1.41, 2.24]",
    "flags": "bool[20] cpu 10 True (50%)",
    "integers": "i8[100] cpu μ=-0.5 σ=29 [-50, 49]",
    "empty": "f32[0, 5] cpu",
    "scalar": "f32[] cpu 3.5",
    "transposed": "f32[5, 4] cpu μ=9.5 σ=5.92 [0, 19]",
    "stepped": "f32[15] cpu μ=49 σ=31.3 [0, 98]",
    "expanded": "f32[3, 2] cpu [[1, 2], [1, 2], [1, 2]] μ=1.5 σ=0.548",
    "huge": "f32[250000000000, 4] cpu μ=1.5 σ=1.12 [0, 3]",
    "leaf": "f32[4, 4] cpu all 0.5 grad",
    "nonleaf": "f32[4, 4] cpu all 1 grad_fn=MulBackward0",
    "tagged": "f32[6] cpu (Tagged) [0, 1, 2, 3, 4, 5] μ=2.5 σ=1.87",
    "exploding": (
        "f32[3, 3] cpu (Exploding) (stats unavailable: RuntimeError: aten.detach.default is not supported by Exploding)"
    ),
    "half": "f16[101] cpu μ=0 σ=0.586 [-1, 1]",
    "nested": "f32[?] cpu nested (nested tensor: components have different shapes)",
    "lazy": "LazyLinear train ? params (lazy: sized by the first forward)",
    "objects": "object[2] ndarray (object array: elements are Python objects)",
    "records": "struct(a, b)[3] ndarray (structured array: stats are per field)",
    "strings": "str5[2] ndarray (string array)",
    "memmapped": "f32[100] memmap μ=49.5 σ=29 [0, 99]",
}
CONTEXTS = ("variables", "hover", "watch", "repl", "clipboard")
PYTHON_WARNING = re.compile(r"\b\w*Warning: ")


@pytest.fixture(scope="module")
def values():
    return bad_values()


def test_every_bad_input_reads_truthfully(values):
    assert set(EXPECTED) == set(values)
    for name, expected in EXPECTED.items():
        assert summarize(values[name]) == expected, name


def walk(value, depth=2):
    """Every line and child the debugger could ask for, two levels deep (groups included)."""
    seen = [present(value, context) for context in CONTEXTS]
    if depth == 0:
        return seen
    for name, child, _ in child_entries(value):
        assert name != "error", (summarize(value), summarize(child))
        seen.append(summarize(child))
        if isinstance(child, Group) or depth > 1:
            seen += walk(child, depth - 1)
    return seen


def snapshot(values):
    with torch._C.DisableTorchFunctionSubclass():
        tensors = {
            k: v
            for k, v in values.items()
            if isinstance(v, torch.Tensor) and k not in ("exploding", "nested", "meta", "huge")
        }
        return {
            "versions": {k: v._version for k, v in tensors.items() if v.layout == torch.strided},
            "copies": {k: v.detach().clone() for k, v in tensors.items()},
            "grad_fn": values["nonleaf"].grad_fn,
            "rng": (torch.get_rng_state(), np.random.get_state()[1].copy()),
            "calls": calls["torch_function"],
        }


def assert_unchanged(values, before):
    after = snapshot(values)
    assert after["versions"] == before["versions"]
    with torch._C.DisableTorchFunctionSubclass():
        for name, copy in before["copies"].items():
            now = after["copies"][name]
            if now.layout != torch.strided:
                now, copy = now.to_dense(), copy.to_dense()
            if now.is_quantized:
                now, copy = now.int_repr(), copy.int_repr()
            torch.testing.assert_close(now, copy, rtol=0, atol=0, equal_nan=True, msg=name)
    assert after["grad_fn"] is before["grad_fn"] and values["leaf"].grad is None
    assert torch.equal(after["rng"][0], before["rng"][0]) and np.array_equal(after["rng"][1], before["rng"][1])
    assert after["calls"] == before["calls"], "a user __torch_function__ ran"


def test_nothing_raises_warns_or_changes_in_any_context(values):
    before = snapshot(values)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lines = [line for value in values.values() for line in walk(value)]
    assert not [str(w.message) for w in caught]
    assert all(isinstance(line, str) for line in lines)
    assert not [line for line in lines if "could not" in line]
    assert max(len(line.splitlines()[0]) for line in lines) <= 120
    assert_unchanged(values, before)


def test_raw_attributes_never_evaluate_copies(values):
    x = torch.arange(6.0).reshape(2, 3)
    raw = dict((name, child) for name, child, _ in child_entries(child_entries(x)[-1][1]))
    for name in ("T", "mT", "H", "mH"):
        assert raw[name].startswith("not evaluated")
    assert raw["_version"] == 0 and raw["is_leaf"] is True
    nonleaf = dict((name, child) for name, child, _ in child_entries(child_entries(values["nonleaf"])[-1][1]))
    assert nonleaf["grad"].startswith("None (not kept")


def test_clipboard_gives_the_full_repr_after_the_line():
    x = torch.tensor([1.0, 2.0])
    assert present(x, "clipboard") == "f32[2] cpu [1, 2] μ=1.5 σ=0.707\ntensor([1., 2.])"
    assert present(x, "hover") == present(x, "watch") == present(x, "repl") == summarize(x)


def test_presentation_imports_neither_torch_nor_numpy():
    probe = (
        "import sys\n"
        "from tensorsight.agent.display.children import child_entries\n"
        "from tensorsight.agent.display.kinds import can_present\n"
        "from tensorsight.agent.display.presentation import summarize\n"
        "assert can_present(int, 'int') is False and summarize(3) == 'int: 3'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))\n"
    )
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    result = subprocess.run([PYTHON, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_under_a_real_debugger():
    path = program("tensors_bad.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, None)]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        variables = session.locals(frame_id)
        for name, expected in EXPECTED.items():
            assert variables[name]["value"] == expected, name
            children = session.children(variables[name])
            assert "error" not in children, (name, children)
            for group in ("stats", "values", "raw attributes"):
                if group in children:
                    assert "error" not in session.children(children[group]), (name, group)
            assert session.evaluate(name, frame_id, "hover")["result"] == expected
        session.continue_(stop["threadId"])
        session.wait_for_exit()
        output = session.stdout()
    assert "STATE OK" in output, output
    assert not PYTHON_WARNING.search(output.split("paused", 1)[1]), output
    assert "[tensorsight]" not in output, output
