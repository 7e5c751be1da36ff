"""core.shapes: broadcasting analysis, torch shape-error parsing, statement targets, the table."""

import pytest

from tensorsight.core.shapes import (
    ShapeRow,
    broadcast_shapes,
    elementwise_broadcast_problem,
    format_shape_table,
    loss_broadcast_problem,
    parse_shape_error,
    reduction_broadcast_problem,
    statement_targets,
)

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)


def test_broadcast_shapes_follows_numpy_rules():
    assert broadcast_shapes((64, 1), (64,)) == (64, 64)
    assert broadcast_shapes((8, 1, 3), (5, 1)) == (8, 5, 3)
    assert broadcast_shapes((3, 4), (3, 5)) is None
    assert broadcast_shapes((), (2, 3)) == (2, 3)


def test_loss_broadcast_problem_catches_n1_against_n():
    problem = loss_broadcast_problem((64, 1), (64,))
    assert problem is not None
    assert problem.result == (64, 64)
    assert "4,096 pairs instead of 64" in problem.message
    assert ".squeeze(-1) on the first operand" in problem.message


@pytest.mark.parametrize(
    ("prediction", "target"),
    [((64,), (64,)), ((64, 10), (64, 10)), ((), (64,)), ((64, 1), (1,)), ((3, 4), (3, 5))],
)
def test_loss_broadcast_problem_silent_on_matching_scalar_or_failing_shapes(prediction, target):
    assert loss_broadcast_problem(prediction, target) is None


def test_loss_broadcast_problem_flags_square_case_where_result_equals_the_prediction():
    # [4, 4] against [4]: the result has the prediction's shape, but each row compares with the whole target
    assert loss_broadcast_problem((4, 4), (4,)) is not None


def test_elementwise_problem_only_for_implicit_rank_broadcasting_that_grows():
    assert elementwise_broadcast_problem((32, 1), (32,)) is not None
    assert elementwise_broadcast_problem((32, 16), (16,)) is None  # bias-like: result equals one operand
    assert elementwise_broadcast_problem((32, 1), (1, 32)) is None  # explicit outer op (same rank)
    assert elementwise_broadcast_problem((32, 1), ()) is None


def test_a_reduction_that_dropped_a_dim_broadcast_back_against_its_source_rank():
    # A / A.sum(1) on a square matrix: the row sums divide the columns
    problem = reduction_broadcast_problem((8, 8), (1,), (8,), (8, 8), "sum")
    assert problem is not None and problem.result == (8, 8)
    assert "sum of a [8, 8] tensor over dim 1 without keepdim" in problem.message and "keepdim=True" in problem.message
    # scores.argmax(1) == y[:, None]: [64] against [64, 1] grows to [64, 64]
    problem = reduction_broadcast_problem((64, 10), (-1,), (64,), (64, 1), "argmax")
    assert problem is not None and problem.result == (64, 64)
    assert reduction_broadcast_problem((8, 8, 8), (1,), (8, 8), (8, 8, 8)) is not None  # a middle dim dropped


@pytest.mark.parametrize(
    ("source", "dims", "reduced", "other"),
    [
        ((32, 16), (0,), (16,), (32, 16)),  # x - x.mean(0): column statistics, aligned where they came from
        ((4, 8, 16), (0, 1), (16,), (4, 8, 16)),  # leading dims reduced
        ((32, 16), (1,), (32,), (32,)),  # same rank as the reduction: an elementwise op of equals
        ((32, 16), (1,), (32,), (32, 16)),  # cannot broadcast: torch raises, nothing silent
        ((5, 1), (0,), (1,), (5, 1)),  # one value left: a scalar
        ((64, 10), (1,), (64,), (64, 10, 1)),  # another rank than the source's: not the broadcast back
    ],
)
def test_reductions_that_keep_the_meaning_are_left_alone(source, dims, reduced, other):
    assert reduction_broadcast_problem(source, dims, reduced, other) is None


@pytest.mark.parametrize(
    ("message", "kind", "shapes"),
    [
        ("mat1 and mat2 shapes cannot be multiplied (64x20 and 16x32)", "matmul", {"mat1": (64, 20), "mat2": (16, 32)}),
        ("The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1", "broadcast", {}),
        (
            "Given groups=1, weight of size [16, 3, 3, 3], expected input[8, 1, 28, 28] to have 3 channels, "
            "but got 1 channels instead",
            "conv-channels",
            {"weight": (16, 3, 3, 3), "input": (8, 1, 28, 28)},
        ),
        (
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 784]",
            "conv-input-rank",
            {"input": (8, 784)},
        ),
        ("shape '[64, 100]' is invalid for input of size 50176", "view", {"target": (64, 100)}),
        (
            "view size is not compatible with input tensor's size and stride (at least one dimension ...)",
            "view-stride",
            {},
        ),
        ("Expected input batch_size (64) to match target batch_size (32).", "batch-size", {}),
        (
            "Target size (torch.Size([64])) must be the same as input size (torch.Size([64, 1]))",
            "target-size",
            {"input": (64, 1), "target": (64,)},
        ),
        (
            "Sizes of tensors must match except in dimension 0. Expected size 4 but got size 5 for tensor number 1",
            "cat",
            {},
        ),
        ("Tensors must have same number of dimensions: got 2 and 3", "cat-rank", {}),
        (
            "Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[4, 8]",
            "layernorm",
            {"normalized_shape": (16,), "input": (4, 8)},
        ),
        ("running_mean should contain 8 elements not 16", "batchnorm", {}),
        (
            "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1.  "
            "Target sizes: [2, 3].  Tensor sizes: [2, 4]",
            "expand",
            {"target": (2, 3), "tensor": (2, 4)},
        ),
        ("input.size(-1) must be equal to input_size. Expected 10, got 20", "rnn-input", {}),
        (
            "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater",
            "kernel-size",
            {},
        ),
    ],
)
def test_parse_shape_error(message, kind, shapes):
    parsed = parse_shape_error(message)
    assert parsed is not None
    assert parsed.kind == kind
    assert dict(parsed.shapes) == shapes
    assert parsed.summary and parsed.hint


def test_parse_shape_error_names_the_inner_sizes_of_a_matmul():
    parsed = parse_shape_error("mat1 and mat2 shapes cannot be multiplied (64x784 and 1024x10)")
    assert parsed is not None
    assert "784 and 1024 differ" in parsed.summary


def test_parse_shape_error_ignores_other_errors():
    assert parse_shape_error("CUDA out of memory") is None
    assert parse_shape_error("mat1 and mat2 must have the same dtype, but got Double and Float") is None


def test_statement_targets_names_assignments_loops_and_multiline_calls():
    source = (
        "x = f(a)\n"  # 1
        "xb, yb = batch\n"  # 2
        "self.w: int = 3\n"  # 3
        "loss = criterion(\n"  # 4
        "    pred,\n"  # 5
        "    target)\n"  # 6
        "for images, (labels, ids) in loader:\n"  # 7
        "    total += images.sum()\n"  # 8
        "print(x)\n"  # 9
        "out[0] = x\n"  # 10
    )
    table = statement_targets(source)
    assert table[1].names == ("x",)
    assert table[2].names == ("xb", "yb")
    assert table[3].names == ("self.w",)
    assert table[5].anchor == 4 and table[6].names == ("loss",)
    assert table[7].names == ("images", "labels", "ids")
    assert table[8].names == ("total",)
    assert table[9].names == ()
    assert table[10].names == (None,)
    assert statement_targets("def broken(:\n") == {}


def test_format_shape_table_indents_children_and_sums_memory():
    rows = [
        ShapeRow("", "Net", [[8, 4]], [[8, 2]], "float32", params=10, trainable=10, memory_bytes=64, depth=0, calls=1),
        ShapeRow(
            "fc", "Linear", [[8, 4]], [[8, 2]], "float32", params=10, trainable=10, memory_bytes=104, depth=1, calls=1
        ),
    ]
    table = format_shape_table(rows, title="Shape map of Net")
    lines = table.splitlines()
    assert lines[0] == "Shape map of Net"
    assert any(line.startswith("Net ") for line in lines)
    assert any(line.startswith("  fc (Linear)") and "f32[8, 2]" in line for line in lines)
    assert "Total params: 10" in table and "168 B" in table


def test_shape_row_to_dict_omits_unknown_location():
    row = ShapeRow("a.b", "Conv2d", [[1, 3, 8, 8]], [[1, 4, 6, 6]], "float32", 112, 112, 700, 2, 1)
    data = row.to_dict()
    assert "file" not in data and data["path"] == "a.b" and data["output_shapes"] == [[1, 4, 6, 6]]
    row.file, row.line = "/x.py", 3
    assert row.to_dict()["line"] == 3


def test_statement_targets_know_which_loop_body_lines_still_see_the_loop_targets():
    source = (
        "for epoch in range(3):\n"  # 1
        "    model.train()\n"  # 2
        "    for xb, yb in loader:\n"  # 3
        "        optimizer.zero_grad()\n"  # 4
        "        xb, yb = xb.to(dev), yb.to(dev)\n"  # 5: its calls still see the loader's batch
        "        loss = model(xb)\n"  # 6: xb was reassigned on line 5
        "    for x in data:\n"  # 7
        "        if x is None:\n"  # 8
        "            x = 0\n"  # 9
        "        y = x\n"  # 10
    )
    table = statement_targets(source)
    assert [table[n].loop for n in (2, 3, 4, 5, 6)] == [1, 1, 3, 3, None]
    assert table[7].loop == 1 and table[8].loop is None and table[10].loop is None
