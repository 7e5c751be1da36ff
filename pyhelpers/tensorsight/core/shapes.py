"""Pure shape logic shared by the agent's observers, the toolbox, the ``shapes`` CLI and the demo.

- ``ShapeRow`` and ``format_shape_table``: one row per module of a shape map (what torchinfo shows), and per
  functional op between modules, in execution order;
- broadcasting analysis: ``broadcast_shapes``, ``loss_broadcast_problem``, ``elementwise_broadcast_problem``
  (prediction ``[N, 1]`` against target ``[N]`` silently becomes ``[N, N]``), ``reduction_broadcast_problem`` (a
  reduction that dropped a dim, broadcast back against its source's rank);
- ``parse_shape_error``: reads torch's shape error messages (``mat1 and mat2 shapes cannot be multiplied``, the
  broadcasting, conv channel, view/reshape, cat, norm and loss size errors) into a structured explanation;
- ``statement_targets``: which names a source line assigns, so an observed shape can be named (``x: f32[64, 16]``).

No torch or numpy here: shapes are tuples of ints and dtypes are names such as ``"float32"``; they are written
through ``core.notation`` (``f32[64, 16]``, ``1.5 KiB``), like every other place that shows them.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.l10n import t
from tensorsight.core.notation import format_bytes, shape_text

Shape = tuple[int, ...]


def numel(shape: Iterable[int]) -> int:
    return math.prod(int(d) for d in shape)


# ---- shape map rows ------------------------------------------------------------------------------------------------


@dataclass
class ShapeRow:
    """One module of a shape map (or, with ``kind == "op"``, one functional op its ``forward`` ran between modules):
    what went in and out of it for one sample batch.

    ``params``/``trainable`` count the module's parameters including its children (as torchinfo does);
    ``memory_bytes`` is the bytes of its outputs that no earlier row counted (in-place results and views add
    nothing) plus the parameters and buffers it holds directly, so the column sums to the model's total for that batch.
    """

    path: str
    type: str
    input_shapes: list[list[int]] = field(default_factory=list)
    output_shapes: list[list[int]] = field(default_factory=list)
    dtype: str = ""
    params: int = 0
    trainable: int = 0
    memory_bytes: int = 0
    depth: int = 0
    calls: int = 0
    file: str | None = None
    line: int | None = None
    # or "op": a functional op of the parent's forward; ``type`` is its label (``F.relu``), ``path`` the parent's path,
    # the label and its line (``features/F.max_pool2d@42``)
    kind: str = "module"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "type": self.type,
            "input_shapes": [list(s) for s in self.input_shapes],
            "output_shapes": [list(s) for s in self.output_shapes],
            "dtype": self.dtype,
            "params": int(self.params),
            "trainable": int(self.trainable),
            "memory_bytes": int(self.memory_bytes),
            "depth": int(self.depth),
            "calls": int(self.calls),
        }
        if self.file is not None:
            out["file"] = self.file
        if self.line is not None:
            out["line"] = int(self.line)
        if self.kind != "module":
            out["kind"] = self.kind
        return out


def _shapes_cell(shapes: Sequence[Sequence[int]], dtype: str) -> str:
    if not shapes:
        return "-"
    texts = [shape_text(s, dtype or None) for s in shapes[:3]]
    more = f" +{len(shapes) - 3}" if len(shapes) > 3 else ""
    return ", ".join(texts) + more


def format_shape_table(rows: Sequence[ShapeRow], title: str | None = None) -> str:
    """A text table of a shape map, children indented under their parent, with totals."""
    header = ("Module (type)", "Input", "Output", "Params", "Trainable", "Memory")
    body: list[tuple[str, ...]] = []
    for row in rows:
        if row.kind == "op":
            name = "  " * row.depth + f"· {row.type}" + (f" ×{row.calls}" if row.calls > 1 else "")
        else:
            name = "  " * row.depth + f"{row.path.rsplit('.', 1)[-1]} ({row.type})" if row.path else row.type
        body.append(
            (
                name,
                _shapes_cell(row.input_shapes, ""),
                _shapes_cell(row.output_shapes, row.dtype),
                f"{row.params:,}",
                f"{row.trainable:,}",
                format_bytes(row.memory_bytes),
            )
        )
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    right = {3, 4, 5}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(header))
    out.append("-" * len(line(header)))
    out.extend(line(r) for r in body)
    if rows:
        root = min(rows, key=lambda r: r.depth)
        total_memory = sum(r.memory_bytes for r in rows)
        out.append("-" * len(line(header)))
        out.append(
            f"Total params: {root.params:,}  Trainable: {root.trainable:,}  "
            f"Memory for this batch (outputs + weights): {format_bytes(total_memory)}"
        )
    return "\n".join(out)


# ---- broadcasting --------------------------------------------------------------------------------------------------


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> Shape | None:
    """The broadcast result of two shapes (numpy/torch rules), or None when they cannot broadcast."""
    result: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = int(a[-i]) if i <= len(a) else 1
        db = int(b[-i]) if i <= len(b) else 1
        if da == db or db == 1:
            result.append(da)
        elif da == 1:
            result.append(db)
        else:
            return None
    return tuple(reversed(result))


@dataclass(frozen=True)
class BroadcastProblem:
    """Two operands that broadcast to something neither of them is (usually ``[N, 1]`` against ``[N]``)."""

    first: Shape
    second: Shape
    result: Shape
    message: str


def _fix_hint(first: Shape, second: Shape) -> str:
    if len(first) == len(second) + 1 and first[-1] == 1 and tuple(first[:-1]) == tuple(second):
        return t("use .squeeze(-1) on the first operand (or .unsqueeze(-1) on the second) so both shapes match")
    if len(second) == len(first) + 1 and second[-1] == 1 and tuple(second[:-1]) == tuple(first):
        return t("use .squeeze(-1) on the second operand (or .unsqueeze(-1) on the first) so both shapes match")
    return t("make both shapes equal before the operation")


def loss_broadcast_problem(input_shape: Sequence[int], target_shape: Sequence[int]) -> BroadcastProblem | None:
    """A loss whose prediction and target shapes differ and broadcast (``[N, 1]`` vs ``[N]`` -> ``[N, N]``).

    Elementwise losses (MSE, L1, BCE...) compare position by position; any broadcasting between prediction and
    target averages over pairs that were never meant to meet. Scalars and shapes that cannot broadcast (torch
    raises on those) are not a silent problem.
    """
    first, second = tuple(int(d) for d in input_shape), tuple(int(d) for d in target_shape)
    if first == second or numel(first) <= 1 or numel(second) <= 1:
        return None
    result = broadcast_shapes(first, second)
    if result is None or (result == first and result == second):
        return None
    return BroadcastProblem(
        first,
        second,
        result,
        t(
            "prediction {first} and target {second} broadcast to {result}: "
            "the loss compares every prediction with every target ({pairs} pairs instead of {expected}); {hint}",
            first=list(first),
            second=list(second),
            result=list(result),
            pairs=f"{numel(result):,}",
            expected=f"{max(numel(first), numel(second)):,}",
            hint=_fix_hint(first, second),
        ),
    )


def elementwise_broadcast_problem(a: Sequence[int], b: Sequence[int]) -> BroadcastProblem | None:
    """An elementwise op whose result is bigger than both operands through implicit rank broadcasting.

    ``[N, 1] - [N]`` silently makes ``[N, N]``. Operands of the same rank (``x[:, None] - y[None, :]``) are an
    explicit outer operation and are left alone, as are scalars and ops whose result equals one operand.
    """
    first, second = tuple(int(d) for d in a), tuple(int(d) for d in b)
    if len(first) == len(second) or numel(first) <= 1 or numel(second) <= 1:
        return None
    result = broadcast_shapes(first, second)
    if result is None or numel(result) <= max(numel(first), numel(second)):
        return None
    return BroadcastProblem(
        first,
        second,
        result,
        t(
            "operands {first} and {second} silently broadcast to {result} ({elements} elements from {largest}); {hint}",
            first=list(first),
            second=list(second),
            result=list(result),
            elements=f"{numel(result):,}",
            largest=f"{max(numel(first), numel(second)):,}",
            hint=_fix_hint(first, second),
        ),
    )


def reduction_broadcast_problem(
    source: Sequence[int],
    dims: Sequence[int],
    reduced: Sequence[int],
    other: Sequence[int],
    reduction: str = "reduction",
) -> BroadcastProblem | None:
    """An operand made by reducing a ``source`` tensor over ``dims`` without ``keepdim``, then combined elementwise
    with a tensor of the source's rank: broadcasting aligns what is left of it with the *last* dims of the other, not
    with the dims it came from (``x - x.mean(1)``, ``A / A.sum(1)``, ``scores.argmax(1) == y[:, None]``).

    Reducing leading dims only (``x - x.mean(0)``: column statistics) keeps the remaining dims where broadcasting puts
    them, which is the intended normalisation; so do ``keepdim=True`` and an explicit ``[:, None]``, which give the
    operand its rank back and never reach this check. Scalars and shapes that cannot broadcast (torch raises) are left
    alone.
    """
    source_shape, reduced_shape, other_shape = (tuple(int(d) for d in s) for s in (source, reduced, other))
    rank = len(source_shape)
    dropped = sorted({int(d) % rank for d in dims}) if rank else []
    if not dropped or len(other_shape) != rank or len(reduced_shape) != rank - len(dropped):
        return None
    if dropped == list(range(len(dropped))) or numel(reduced_shape) <= 1:
        return None  # leading dims reduced: the rest is right-aligned where it came from
    result = broadcast_shapes(reduced_shape, other_shape)
    if result is None:
        return None
    where = ", ".join(str(d) for d in dropped)
    return BroadcastProblem(
        reduced_shape,
        other_shape,
        result,
        t(
            "{reduced} is the {reduction} of a {source} tensor over dim {dims} without "
            "keepdim, so broadcasting lines it up with the last dims of {other} instead of the dims it came "
            "from (result {result}); reduce with keepdim=True (or .unsqueeze({dim}) it) so each value meets "
            "its own row",
            reduced=list(reduced_shape),
            reduction=reduction,
            source=list(source_shape),
            dims=where,
            other=list(other_shape),
            result=list(result),
            dim=dropped[0],
        ),
    )


# ---- shape error messages ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeError:
    """What a torch shape error says, in structured form: ``kind``, the shapes it names, and a fix hint."""

    kind: str
    summary: str
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    hint: str = ""


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"-?\d+", text))


def _parse_matmul(m: re.Match[str]) -> ShapeError:
    a = (int(m["a0"]), int(m["a1"]))
    b = (int(m["b0"]), int(m["b1"]))
    return ShapeError(
        "matmul",
        t("a matrix product got {0}x{1} and {2}x{3}: the inner sizes {1} and {2} differ", a[0], a[1], b[0], b[1]),
        {"mat1": a, "mat2": b},
        t("the input's last dimension is {0} but the layer expects {1}", a[1], b[0]),
    )


def _parse_broadcast(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "broadcast",
        t("elementwise operands disagree at dimension {0}: {1} vs {2}", m["dim"], m["a"], m["b"]),
        {},
        t("make the operands' shapes equal (or 1) in that dimension"),
    )


def _parse_conv_channels(m: re.Match[str]) -> ShapeError:
    weight = _dims(m["weight"])
    given = _dims(m["input"])
    return ShapeError(
        "conv-channels",
        t("the convolution expects {0} input channels but got {1} (input {2})", m["want"], m["got"], list(given)),
        {"weight": weight, "input": given},
        t("set in_channels to the data's channel count, or check the input layout is [N, C, H, W]"),
    )


def _parse_conv_rank(m: re.Match[str]) -> ShapeError:
    given = _dims(m["input"])
    return ShapeError(
        "conv-input-rank",
        t("{0} expects {1} input but got shape {2}", m["op"], m["want"], list(given)),
        {"input": given},
        t("reshape the input to [N, C, ...] (e.g. x.view(N, C, H, W)) before the convolution"),
    )


def _parse_view(m: re.Match[str]) -> ShapeError:
    target = _dims(m["shape"])
    size = int(m["size"])
    known = numel(d for d in target if d != -1)
    return ShapeError(
        "view",
        t("cannot view {0} elements as {1} ({2} elements)", f"{size:,}", list(target), f"{known:,}"),
        {"target": target},
        t("check the batch size and feature sizes; use -1 for the dimension to infer (e.g. x.view(x.size(0), -1))"),
    )


def _parse_view_stride(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "view-stride",
        t("view() on a non-contiguous tensor (after transpose/permute)"),
        {},
        t("use .reshape(...) or call .contiguous() before .view(...)"),
    )


def _parse_batch(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "batch-size",
        t("the prediction has batch size {0} but the target has {1}", m["a"], m["b"]),
        {},
        t("the model output and the labels must come from the same batch (check reshapes that fold the batch)"),
    )


def _parse_target_size(m: re.Match[str]) -> ShapeError:
    target, given = _dims(m["target"]), _dims(m["input"])
    return ShapeError(
        "target-size",
        t("the loss got prediction {0} and target {1}", list(given), list(target)),
        {"input": given, "target": target},
        _fix_hint(given, target),
    )


def _parse_cat(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "cat",
        t(
            "tensors to concatenate differ outside dimension {0}: size {1} vs {2} (tensor number {3} in the list)",
            m["dim"],
            m["want"],
            m["got"],
            m["index"],
        ),
        {},
        t("only the concatenation dimension may differ"),
    )


def _parse_cat_rank(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "cat-rank",
        t("tensors to concatenate have {0} and {1} dimensions", m["a"], m["b"]),
        {},
        t("unsqueeze/reshape first"),
    )


def _parse_layernorm(m: re.Match[str]) -> ShapeError:
    norm, given = _dims(m["norm"]), _dims(m["input"])
    return ShapeError(
        "layernorm",
        t("LayerNorm normalises over {0} but the input is {1}", list(norm), list(given)),
        {"normalized_shape": norm, "input": given},
        t("normalized_shape must equal the input's last dimensions"),
    )


def _parse_batchnorm(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "batchnorm",
        t("BatchNorm has {0} features but the input has {1} channels", m["want"], m["got"]),
        {},
        t("num_features must equal the input's channel dimension (dim 1)"),
    )


def _parse_expand(m: re.Match[str]) -> ShapeError:
    target, given = _dims(m["target"]), _dims(m["given"])
    return ShapeError(
        "expand",
        t("cannot expand {0} to {1}", list(given), list(target)),
        {"target": target, "tensor": given},
        t("only size-1 dimensions can be expanded"),
    )


def _parse_rnn(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "rnn-input",
        t("the recurrent layer expects {0} input features but got {1}", m["want"], m["got"]),
        {},
        t("input_size must equal the last dimension; check batch_first"),
    )


def _parse_bmm(m: re.Match[str]) -> ShapeError:
    want, got = _dims(m["want"]), _dims(m["got"])
    return ShapeError(
        "matmul",
        t("a batched matrix product expected the second operand to start with {0} but got {1}", list(want), list(got)),
        {"expected": want, "got": got},
        t("the batch sizes must match and the inner sizes must agree"),
    )


def _parse_mv(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "matmul",
        t("matrix-vector product: matrix {0} and vector ({1})", m["mat"], m["vec"]),
        {},
        t("the vector's length must equal the matrix's columns"),
    )


def _parse_kernel(m: re.Match[str]) -> ShapeError:
    return ShapeError(
        "kernel-size",
        t("the input ({0}) is smaller than the kernel ({1})", m["input"], m["kernel"]),
        {},
        t("the image shrank too much before this layer: pad, use a smaller kernel, or fewer poolings"),
    )


_PATTERNS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (
        re.compile(
            r"mat1 and mat2 shapes cannot be multiplied \((?P<a0>\d+)x(?P<a1>\d+) and (?P<b0>\d+)x(?P<b1>\d+)\)"
        ),
        _parse_matmul,
    ),
    (
        re.compile(
            r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\) "
            r"at non-singleton dimension (?P<dim>-?\d+)"
        ),
        _parse_broadcast,
    ),
    (
        re.compile(
            r"weight of size (?P<weight>\[[\d, ]+\]), expected input(?P<input>\[[\d, ]+\]) to have (?P<want>\d+) "
            r"channels, but got (?P<got>\d+) channels"
        ),
        _parse_conv_channels,
    ),
    (
        re.compile(r"Expected (?P<want>.+?) input to (?P<op>\w+), but got input of size: ?(?P<input>\[[\d, ]*\])"),
        _parse_conv_rank,
    ),
    (re.compile(r"shape '(?P<shape>\[[-\d, ]*\])' is invalid for input of size (?P<size>\d+)"), _parse_view),
    (re.compile(r"view size is not compatible with input tensor's size and stride"), _parse_view_stride),
    (re.compile(r"Expected input batch_size \((?P<a>\d+)\) to match target batch_size \((?P<b>\d+)\)"), _parse_batch),
    (
        re.compile(
            r"(?:Target size|Using a target size) \(torch\.Size\((?P<target>\[[\d, ]*\])\)\) (?:must be the same as|"
            r"that is different to) (?:the )?input size \(torch\.Size\((?P<input>\[[\d, ]*\])\)\)"
        ),
        _parse_target_size,
    ),
    (
        re.compile(
            r"Sizes of tensors must match except in dimension (?P<dim>\d+)\. Expected size (?P<want>\d+) but got "
            r"size (?P<got>\d+) for tensor number (?P<index>\d+)"
        ),
        _parse_cat,
    ),
    (re.compile(r"Tensors must have same number of dimensions: got (?P<a>\d+) and (?P<b>\d+)"), _parse_cat_rank),
    (
        re.compile(
            r"Given normalized_shape=(?P<norm>\[[\d, ]*\]), expected input with shape \[\*, [\d, ]*\], "
            r"but got input of size ?(?P<input>\[[\d, ]*\])"
        ),
        _parse_layernorm,
    ),
    (re.compile(r"running_mean should contain (?P<got>\d+) elements not (?P<want>\d+)"), _parse_batchnorm),
    (
        re.compile(
            r"The expanded size of the tensor \(\d+\) must match the existing size \(\d+\) at non-singleton "
            r"dimension -?\d+\.\s+Target sizes: (?P<target>\[[-\d, ]*\])\.\s+Tensor sizes: (?P<given>\[[\d, ]*\])"
        ),
        _parse_expand,
    ),
    (
        re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (?P<want>\d+), got (?P<got>\d+)"),
        _parse_rnn,
    ),
    (
        re.compile(
            r"Expected size for first two dimensions of batch2 tensor to be: (?P<want>\[[\d, ]*\]) but got: "
            r"(?P<got>\[[\d, ]*\])"
        ),
        _parse_bmm,
    ),
    (re.compile(r"size mismatch, got input \(\d+\), mat \((?P<mat>\d+x\d+)\), vec \((?P<vec>\d+)\)"), _parse_mv),
    (
        re.compile(
            r"Calculated padded input size per channel: \((?P<input>[\d x]+)\)\. Kernel size: \((?P<kernel>[\d x]+)\)"
        ),
        _parse_kernel,
    ),
)


def parse_shape_error(message: str) -> ShapeError | None:
    """Recognise a torch shape error message; None when it is not one."""
    for pattern, build in _PATTERNS:
        match = pattern.search(message)
        if match is not None:
            result: ShapeError = build(match)
            return result
    return None


# ---- naming observed values ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementTargets:
    """The statement a source line belongs to: its first line and the names it assigns (in order).

    ``loop``: the first line of the innermost ``for`` whose body this statement is in, when no earlier statement of
    that body can have reassigned the loop's targets: while this statement runs, they still hold what the header
    assigned (``for xb, yb in loader:`` followed by ``xb, yb = xb.to(device), ...``).
    """

    anchor: int
    names: tuple[str | None, ...]
    loop: int | None = None


def _target_names(node: ast.expr) -> list[str | None]:
    if isinstance(node, (ast.Tuple, ast.List)):
        out: list[str | None] = []
        for element in node.elts:
            out.extend(_target_names(element.value if isinstance(element, ast.Starred) else element))
        return out
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        try:
            return [ast.unparse(node)]
        except Exception:  # noqa: BLE001 - unparse of odd nodes
            return [None]
    return [None]


_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


def statement_targets(source: str) -> dict[int, StatementTargets]:
    """Map each line of ``source`` that runs code to its statement's first line and assigned names.

    Simple statements cover all their lines (a call spread over several lines maps to its first line); compound
    statements cover only their header (``for x, y in loader:`` names ``x`` and ``y``). Unparseable source gives {}.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict[int, StatementTargets] = {}
    for node in ast.walk(tree):
        names: list[str | None]
        if isinstance(node, _SIMPLE):
            end = node.end_lineno or node.lineno
            if isinstance(node, ast.Assign):
                names = _target_names(node.targets[-1])
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                names = _target_names(node.target)
            else:
                names = []
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            end = node.iter.end_lineno or node.lineno
            names = _target_names(node.target)
        elif isinstance(node, (ast.If, ast.While)):
            end = node.test.end_lineno or node.lineno
            names = []
        else:
            continue
        info = StatementTargets(node.lineno, tuple(names))
        for line in range(node.lineno, end + 1):
            out.setdefault(line, info)
    _mark_loop_bodies(tree, out)
    return out


def _mark_loop_bodies(tree: ast.AST, table: dict[int, StatementTargets]) -> None:
    """Set ``loop`` on the leading statements of each ``for`` body that run before its targets can be reassigned."""
    loops = sorted(
        (node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.AsyncFor))),
        key=lambda node: node.lineno,
        reverse=True,  # inner loops first: a statement belongs to its innermost loop
    )
    claimed: set[int] = set()  # lines of an inner loop's body: they belong to that loop, marked or not
    for loop in loops:
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        for statement in loop.body:
            stores = targets & {
                n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            compound = not isinstance(statement, _SIMPLE)
            if compound and stores:
                break  # inside it, a reassignment may come before a later line runs
            for line in range(statement.lineno, (statement.end_lineno or statement.lineno) + 1):
                info = table.get(line)
                if info is not None and line not in claimed:
                    table[line] = StatementTargets(info.anchor, info.names, loop.lineno)
            if stores:
                break  # a simple statement assigns after its own calls ran: the next statements see new values
        body = loop.body
        claimed.update(range(body[0].lineno, (body[-1].end_lineno or body[-1].lineno) + 1))
