"""Memory reasoning shared by the agent and the doctor (pure): OOM remedies ranked by the numbers, and the source
line that keeps autograd graphs alive.

- ``parse_oom_message`` reads the figures PyTorch prints in a CUDA out-of-memory error;
  ``rank_oom_remedies`` orders the seed lesson's remedies (smaller batch, mixed precision, gradient checkpointing,
  ``.item()`` instead of keeping tensors, ``torch.no_grad()`` for evaluation, allocator settings against
  fragmentation) by what the measured numbers show.
- ``accumulation_line`` finds, in the user's source, the statement that keeps growing a variable (``total += loss``,
  ``losses.append(loss)``), which is where a retained autograd graph should be reported; ``item_accumulation_line``
  the same for an item of a dict (``ema[name] = decay * ema[name] + ...``).

Sizes are written by ``core.notation.format_bytes`` (the units parsed here are the ones PyTorch prints).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from tensorsight.core.l10n import t
from tensorsight.core.notation import format_bytes

_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_SIZE = r"([0-9.]+)\s*(B|KiB|MiB|GiB|TiB)"
_OOM_FIELDS = {
    "requested": rf"Tried to allocate {_SIZE}",
    "capacity": rf"total capacity of {_SIZE}",
    "free": rf"of which {_SIZE} is free",
    "in_use": rf"this process has {_SIZE} memory in use",
    "allocated": rf"{_SIZE} is allocated by PyTorch",
    "reserved_unallocated": rf"{_SIZE} is reserved by PyTorch but unallocated",
}


def parse_oom_message(text: str) -> dict[str, int]:
    """Byte counts found in a PyTorch CUDA OOM message (keys of ``_OOM_FIELDS`` that are present)."""
    found: dict[str, int] = {}
    for key, pattern in _OOM_FIELDS.items():
        match = re.search(pattern, text)
        if match:
            found[key] = int(float(match.group(1)) * _UNITS[match.group(2)])
    return found


@dataclass(frozen=True)
class OomFacts:
    """What the agent knew when the out-of-memory error happened (None: not measured)."""

    requested: int | None = None
    capacity: int | None = None
    allocated: int | None = None
    reserved_unallocated: int | None = None
    growth_per_step: float | None = None  # bytes the allocator kept gaining per step before the error
    steps_completed: int = 0
    retained_graph_name: str | None = None  # a variable seen keeping autograd graphs alive
    in_eval_with_grad: bool = False  # the error came from an eval-mode forward with autograd recording
    parameter_bytes: int | None = None


@dataclass(frozen=True)
class Remedy:
    title: str
    why: str
    score: float


def rank_oom_remedies(facts: OomFacts) -> list[Remedy]:
    """The seed's OOM remedies, most likely to help first, each with the measurement that ranks it."""
    remedies: list[Remedy] = []
    capacity = facts.capacity or 0
    if facts.retained_graph_name:
        remedies.append(
            Remedy(
                t("stop keeping autograd graphs alive: accumulate `{0}` with loss.item()", facts.retained_graph_name),
                t("`{0}` holds the graph of every step", facts.retained_graph_name),
                100.0,
            )
        )
    if facts.growth_per_step and facts.growth_per_step > 0 and facts.steps_completed >= 2:
        remedies.append(
            Remedy(
                t(
                    "free what each step leaves behind: log with .item(), del large tensors, "
                    "don't append outputs to lists"
                ),
                t(
                    "allocated memory grew by {0} per step over {1} steps",
                    format_bytes(facts.growth_per_step),
                    facts.steps_completed,
                ),
                90.0,
            )
        )
    if facts.in_eval_with_grad:
        remedies.append(
            Remedy(
                t("wrap evaluation in torch.no_grad() (or torch.inference_mode())"),
                t("the error happened in an eval-mode forward that was recording an autograd graph"),
                95.0,
            )
        )
    unallocated = facts.reserved_unallocated or 0
    if (capacity and unallocated > 0.1 * capacity) or (facts.requested and unallocated > facts.requested):
        remedies.append(
            Remedy(
                t("reduce fragmentation: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before starting"),
                t("{0} is reserved by PyTorch but unallocated", format_bytes(unallocated)),
                80.0 if capacity and unallocated > 0.2 * capacity else 40.0,
            )
        )
    model_heavy = bool(facts.parameter_bytes and capacity and facts.parameter_bytes * 4 > 0.5 * capacity)
    first_step = facts.steps_completed == 0
    batch_why = (
        t("the first step did not fit")
        if first_step
        else t("the error came after {0} steps without steady growth: a larger batch/sequence", facts.steps_completed)
    )
    remedies.append(
        Remedy(
            t("reduce the batch size (keep the effective batch with gradient accumulation)"),
            batch_why,
            70.0 if not model_heavy else 50.0,
        )
    )
    remedies.append(
        Remedy(
            t('use mixed precision: with torch.autocast("cuda", dtype=torch.bfloat16): (halves activations)'),
            t(
                "parameters, gradients and optimizer state need about {0}",
                format_bytes((facts.parameter_bytes or 0) * 4),
            )
            if facts.parameter_bytes
            else t("activations and weights in 16-bit take half the memory"),
            65.0 if model_heavy else 60.0,
        )
    )
    remedies.append(
        Remedy(
            t("trade compute for memory with gradient checkpointing (torch.utils.checkpoint.checkpoint)"),
            t("activations of the checkpointed blocks are recomputed in backward instead of stored"),
            55.0,
        )
    )
    remedies.append(
        Remedy(
            t("call torch.cuda.empty_cache() only between phases (it does not free live tensors)"),
            t("returns cached blocks to the driver for other processes"),
            10.0,
        )
    )
    return sorted(remedies, key=lambda remedy: -remedy.score)


def oom_summary(facts: OomFacts) -> str:
    """One line with the figures of an OOM error."""
    parts = []
    if facts.requested is not None:
        parts.append(t("tried to allocate {0}", format_bytes(facts.requested)))
    if facts.allocated is not None:
        parts.append(t("{0} allocated by PyTorch", format_bytes(facts.allocated)))
    if facts.reserved_unallocated is not None:
        parts.append(t("{0} reserved but unallocated", format_bytes(facts.reserved_unallocated)))
    if facts.capacity is not None:
        parts.append(t("capacity {0}", format_bytes(facts.capacity)))
    return ", ".join(parts)


_GROWING_METHODS = ("append", "extend", "insert", "add")


def item_accumulation_line(source: str, name: str, near_line: int | None = None) -> int | None:
    """The line that grows an item of the container ``name`` from itself, in any function of ``source``:
    ``ema[key] = decay * ema[key] + (1 - decay) * param``, ``totals[key] += loss``. The update usually lives in a
    helper (``update_ema(ema, model)``) that gets the container under the same name; when several qualify, the one
    closest to ``near_line`` wins.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None

    def item_of_name(node: ast.AST) -> bool:
        return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name

    candidates = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and item_of_name(node.target):
            candidates.append(node.lineno)
        elif isinstance(node, ast.Assign) and any(item_of_name(t) for t in node.targets):
            if any(item_of_name(sub) for sub in ast.walk(node.value)):
                candidates.append(node.lineno)
    return _nearest_line(candidates, near_line)


def _nearest_line(candidates: list[int], near_line: int | None) -> int | None:
    """The candidate line closest to ``near_line`` (the first on a tie; the first of all without one), or None."""
    if not candidates:
        return None
    if near_line is None:
        return min(candidates)
    return min(candidates, key=lambda line: (abs(line - near_line), line))


def _references(node: ast.AST, name: str) -> bool:
    return any(_is_named(sub, name) for sub in ast.walk(node))


def _is_named(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is ``name``: a plain name, or an attribute path read as written (``self.smooth_loss``)."""
    if isinstance(node, ast.Name):
        return node.id == name
    if not isinstance(node, ast.Attribute) or "." not in name:
        return False
    from tensorsight.core.rules.facts import dotted  # only when a growing line is looked for (a finding's place)

    return dotted(node) == name


def _scope_body(tree: ast.Module, scope_first_line: int | None) -> list[ast.stmt]:
    if scope_first_line is None:
        return tree.body
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if scope_first_line in (node.lineno, first):
                return node.body
    return tree.body


def _walk_scope(statements: list[ast.stmt]) -> list[ast.AST]:
    """Every node of a scope without entering nested functions or classes."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)
    return found


def accumulation_line(source: str, name: str, scope_first_line: int | None, near_line: int | None = None) -> int | None:
    """The line in a scope that grows ``name`` from itself: ``name += x``, ``name = name + x``, ``name.append(x)``;
    ``name`` may be an attribute path (``self.running_loss``), then looked for in the whole file when the scope has
    no such line (another method of the class grows it).

    ``scope_first_line`` is the ``def`` line of the function (``co_firstlineno``), None for module level. When several
    statements qualify, the one closest to ``near_line`` (where the program currently is) wins.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    candidates = _growing_lines(_walk_scope(_scope_body(tree, scope_first_line)), name)
    if not candidates and "." in name:  # an attribute (``self.total``) may be grown by another method of its class
        candidates = _growing_lines(list(ast.walk(tree)), name)
    return _nearest_line(candidates, near_line)


def _growing_lines(nodes: list[ast.AST], name: str) -> list[int]:
    candidates: list[int] = []
    for node in nodes:
        if isinstance(node, ast.AugAssign) and _is_named(node.target, name):
            candidates.append(node.lineno)
        elif isinstance(node, ast.Assign) and any(_is_named(t, name) for t in node.targets):
            if _references(node.value, name):
                candidates.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _GROWING_METHODS
            and _is_named(node.func.value, name)
        ):
            candidates.append(node.lineno)
    return candidates
