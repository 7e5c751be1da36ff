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
