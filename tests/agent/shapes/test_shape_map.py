"""agent.shapes.shape_map: the shape map of one real forward, recorded through per-module hooks as
``tensorsight.check_shapes`` does, and printed by ``core.shapes.format_shape_table`` in ``core.notation``'s terms."""

from __future__ import annotations

import torch
from torch import nn

from tensorsight.agent.shapes.shape_map import ShapeMapRecorder, has_parameters, is_loss_module, tensors_in
from tensorsight.core.shapes import format_shape_table


def test_a_forward_fills_one_row_per_module_in_tree_order():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2), nn.Dropout())
    model[3].requires_grad_(False)
    recorder = ShapeMapRecorder(model)
    handles = []
    for module in model.modules():
        handles.append(module.register_forward_pre_hook(lambda m, args: recorder.before(m, args)))
        handles.append(module.register_forward_hook(lambda m, args, out: recorder.after(m, out)))
    try:
        model(torch.randn(4, 8))
    finally:
        for handle in handles:
            handle.remove()
    rows = recorder.finish()
    assert [(r.path, r.type, r.depth, r.calls) for r in rows] == [
        ("", "Sequential", 0, 1),
        ("0", "Linear", 1, 1),
        ("1", "ReLU", 1, 1),
        ("2", "Linear", 1, 1),
        ("3", "Dropout", 1, 1),
    ]
    first = rows[1]
    assert (first.input_shapes, first.output_shapes, first.dtype) == ([[4, 8]], [[4, 16]], "float32")
    assert (first.params, first.trainable) == (8 * 16 + 16, 8 * 16 + 16)
    assert first.memory_bytes == 4 * 16 * 4 + (8 * 16 + 16) * 4  # its output plus the weights it holds itself
    assert rows[0].params == 8 * 16 + 16 + 16 * 2 + 2
    table = format_shape_table(rows)
    assert "f32[4, 16]" in table and "832 B" in table


def test_helpers_read_without_touching_values():
    a, b = torch.ones(2), torch.zeros(3, dtype=torch.int64)
    assert tensors_in(({"x": a}, [b, 3])) == [a, b]
    assert tensors_in([a] * 20, limit=4) == [a] * 4
    assert has_parameters(nn.Linear(1, 1)) and not has_parameters(nn.ReLU())
    assert is_loss_module(nn.MSELoss()) and not is_loss_module(nn.Linear(1, 1))


class _RegisteredOutOfOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc2 = nn.Linear(32, 10)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.act = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(8 * 2 * 2, 32)
        self.unused = nn.Linear(1, 1)

    def forward(self, x):
        x = self.act(self.conv1(x))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = self.conv2(x)
        x.add_(1)
        x = torch.flatten(torch.nn.functional.max_pool2d(x, 2), 1)
        return self.fc2(torch.relu(self.fc1(x)))


def _record(model, sample, **options):
    recorder = ShapeMapRecorder(model, **options)
    handles = []
    for module in model.modules():
        handles.append(module.register_forward_pre_hook(lambda m, args: recorder.before(m, args)))
        handles.append(module.register_forward_hook(lambda m, args, out: recorder.after(m, out)))
    try:
        with torch.no_grad():
            model(sample)
    finally:
        for handle in handles:
            handle.remove()
    return recorder.finish()


def test_rows_follow_execution_order_with_the_functional_ops_between_modules():
    torch.manual_seed(0)
    rows = _record(_RegisteredOutOfOrder(), torch.randn(2, 1, 8, 8))
    assert [(r.kind, r.path if r.kind == "module" else r.type, r.depth) for r in rows] == [
        ("module", "", 0),
        ("module", "conv1", 1),
        ("module", "act", 1),
        ("op", "F.max_pool2d", 1),
        ("module", "conv2", 1),
        ("op", "Tensor.add_", 1),
        ("op", "F.max_pool2d", 1),
        ("op", "torch.flatten", 1),
        ("module", "fc1", 1),
        ("op", "torch.relu", 1),
        ("module", "fc2", 1),
        ("module", "unused", 1),  # never called: after the ones that ran, without shapes
    ]
    pool = rows[3]
    assert (pool.input_shapes, pool.output_shapes, pool.calls) == ([[2, 4, 8, 8]], [[2, 4, 4, 4]], 1)
    assert pool.file == __file__ and pool.line == _RegisteredOutOfOrder.forward.__code__.co_firstlineno + 2
    assert rows[-1].calls == 0 and rows[-1].output_shapes == []
    assert torch._C._len_torch_function_stack() == 0  # the recorder's own mode is gone


def test_in_place_results_views_and_a_parent_returning_its_childs_output_are_counted_once():
    rows = {
        (r.kind, r.path if r.kind == "module" else r.type): r
        for r in _record(_RegisteredOutOfOrder(), torch.randn(2, 1, 8, 8))
    }
    conv1 = rows["module", "conv1"]
    assert conv1.memory_bytes == 2 * 4 * 8 * 8 * 4 + (4 * 1 * 9 + 4) * 4
    assert rows["module", "act"].memory_bytes == 0  # ReLU(inplace=True) wrote into conv1's output
    assert rows["op", "Tensor.add_"].memory_bytes == 0
    assert rows["op", "torch.flatten"].memory_bytes == 0  # a view
    assert rows["module", ""].memory_bytes == 0  # the model returns fc2's output, counted there
    table = format_shape_table(list(rows.values()))
    assert "· F.max_pool2d" in table


def test_a_recorder_fed_by_another_mode_pushes_none_of_its_own():
    rows = _record(_RegisteredOutOfOrder(), torch.randn(2, 1, 8, 8), watch_ops=False)
    assert [r for r in rows if r.kind == "op"] == []


def test_op_rows_have_paths_of_their_own():
    rows = _record(_RegisteredOutOfOrder(), torch.randn(2, 1, 8, 8))
    paths = [r.path for r in rows]
    assert len(set(paths)) == len(paths)
    line = _RegisteredOutOfOrder.forward.__code__.co_firstlineno + 2
    assert f"/F.max_pool2d@{line}" in paths


class _SplitHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, dim=-1)  # views of an output no variable keeps
        q = q.view(2, 3, 2, 4)
        return (q == 0).float(), k, v


def test_views_of_an_output_nobody_keeps_are_still_not_new_memory():
    rows = {r.type: r for r in _record(_SplitHeads(), torch.randn(2, 3, 8)) if r.kind == "op"}
    assert set(rows) == {"Tensor.split", "Tensor.view", "Tensor.eq", "Tensor.float"}
    assert rows["Tensor.split"].memory_bytes == rows["Tensor.view"].memory_bytes == 0
    assert rows["Tensor.eq"].memory_bytes == 2 * 3 * 2 * 4  # a new bool tensor
