"""Rules about train/eval modes (TS102, TS103).

TS102: an evaluation loop that runs the model with neither ``model.eval()`` nor ``torch.no_grad()`` (dropout on,
batch-norm statistics updated from evaluation data, and a graph recorded for nothing). TS103: a training loop that
switches the model to ``eval()`` (directly or through a helper such as ``evaluate(model, ...)``) and never back to
``train()``, so every later epoch trains in evaluation mode.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    LOOP_TYPES,
    FunctionSummary,
    LoopFacts,
    ModuleFacts,
    backward_call,
    eval_mode_call,
    is_grad_disabling,
    looks_like_model,
    method,
    position,
    receiver,
    root_name,
    text_of,
    train_mode_call,
    words,
)
from tensorsight.core.rules.fixes import insert_line_before, make_fix, wrap_in_block
from tensorsight.core.rules.model import Fix, RuleInfo, Span
from tensorsight.core.rules.model_classes import mode_dependent_layer

EVAL_WITHOUT_EVAL_MODE = RuleInfo(
    "TS102",
    "evaluation-in-training-mode",
    "training-logic",
    "warning",
    "evaluation runs the model in training mode and records the autograd graph: dropout stays on, batch-norm learns "
    "from evaluation data, and memory grows; call model.eval() and run it under torch.no_grad()",
)
EVAL_NEVER_BACK_TO_TRAIN = RuleInfo(
    "TS103",
    "eval-never-back-to-train",
    "training-logic",
    "warning",
    "the model is switched to eval() inside this training loop and never back to train(): every later step trains "
    "with dropout off and frozen batch-norm statistics",
)

EVAL_WORDS = frozenset({"val", "valid", "validation", "test", "testing", "eval", "evaluation", "dev", "holdout"})
EVAL_FUNCTION_WORDS = EVAL_WORDS | {"evaluate", "validate", "predict", "prediction", "inference", "infer"}
FROZEN_WORDS = frozenset({"teacher", "ema", "target", "frozen", "ref", "reference", "pretrained", "old", "critic"})


# ----------------------------------------------------------------------------------------------------------- TS102
def check_evaluation_mode(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    test_file = _is_test_file(path)
    qualifying: list[tuple[LoopFacts, ast.Call]] = []
    for loop in facts.loops:
        if not isinstance(loop.node, (ast.For, ast.AsyncFor)) or loop.backwards or loop.steps:
            continue
        if not _is_evaluation_loop(facts, loop, test_file):
            continue
        model_call = _first_model_call(loop.calls)
        if model_call is not None:
            qualifying.append((loop, model_call))
    chosen = {id(loop.node) for loop, _ in qualifying}
    for loop, model_call in qualifying:
        if any(id(outer) in chosen for outer in facts.enclosing_loops(loop.node)):
            continue  # reported once, at the outermost evaluation loop
        # at the forward pass itself, where the run-time check (measurement.evaluation) reports the same bug: one
        # line, so the editor's Problems merge them into one
        finding = _evaluation_finding(facts, path, loop.scope, model_call, facts.span(model_call), loop)
        if finding is not None:
            yield finding
    for function, model_call in _evaluation_helpers(facts, test_file):
        finding = _evaluation_finding(facts, path, function, model_call, facts.span(model_call), None)
        if finding is not None:
            yield finding


def _evaluation_finding(
    facts: ModuleFacts,
    path: str,
    scope: ast.AST,
    model_call: ast.Call,
    span: Span,
    loop: LoopFacts | None,
) -> Finding | None:
    """TS102 for one evaluation (a loop, or a helper's forward pass), or None when it is protected."""
    function = scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    evaluated, grad_off = _protection(facts, scope, model_call, function)
    if evaluated:
        return None
    model_text = text_of(model_call.func)
    layer = None
    if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
        layer = mode_dependent_layer(facts, scope, model_call.func, position(model_call))
    where = (
        t("this evaluation loop") if loop is not None else f"{function.name}()" if function else t("this evaluation")
    )
    if grad_off:
        if layer is None:
            return None  # no graph is recorded and nothing in the model depends on the mode
        effect = t("dropout stays on") if "ropout" in layer else t("batch-norm statistics learn from evaluation data")
        message = t(
            "{where} runs {model} in training mode: turning gradients off does not switch off its {layer}, so "
            "{effect} and the metric is wrong; call {model}.eval() before evaluating (and .train() after)",
            where=where,
            model=model_text,
            layer=layer,
            effect=effect,
        )
        return EVAL_WITHOUT_EVAL_MODE.finding(path, span, message)
    because = f" ({layer})" if layer is not None else ""
    message = t(
        "{where} runs {model} in training mode{because} and records the autograd graph: dropout stays "
        "on, batch-norm learns from evaluation data, and memory grows; call {model}.eval() first and run "
        "it under torch.no_grad()",
        where=where,
        model=model_text,
        because=because,
    )
    # With a layer that eval() switches, no_grad alone would not be the whole fix: no quick fix is offered.
    fix = None
    if layer is None:
        fix = _no_grad_fix(facts, loop, function)
    return EVAL_WITHOUT_EVAL_MODE.finding(path, span, message, fix)


def _is_test_file(path: str) -> bool:
    name = os.path.basename(path)
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _is_evaluation_loop(facts: ModuleFacts, loop: LoopFacts, test_file: bool) -> bool:
    assert isinstance(loop.node, (ast.For, ast.AsyncFor))
    if EVAL_WORDS & set(words(text_of(loop.node.iter))):
        return True
    function = facts.enclosing_function(loop.node)
    return function is not None and _is_evaluation_function(function, test_file)


def _is_evaluation_function(function: ast.FunctionDef | ast.AsyncFunctionDef, test_file: bool) -> bool:
    if function.name.endswith("_step"):
        return False
    if test_file and function.name.startswith("test"):
        return False
    return bool(EVAL_FUNCTION_WORDS & set(words(function.name)))


def _evaluation_helpers(facts: ModuleFacts, test_file: bool) -> Iterator[tuple[ast.FunctionDef, ast.Call]]:
    """``def evaluate(net): return F.cross_entropy(net(val_x), val_y).item()``: an evaluation function with no loop
    that runs a model forward and turns the result into a number (so it is never backpropagated)."""
    for function in facts.scopes:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not _is_evaluation_function(function, test_file):
            continue
        nodes = facts.local_nodes(function)
        calls = sorted((n for n in nodes if isinstance(n, ast.Call)), key=position)
        if any(isinstance(n, LOOP_TYPES) for n in nodes):
            continue  # the loop form is judged as a loop
        if any(backward_call(c) is not None or facts.step_call(c) is not None for c in calls):
            continue
        if not any(method(c) in _NUMBER_METHODS for c in calls):
            continue
        model_call = _first_model_call(calls)
        if model_call is not None:
            yield function, model_call  # type: ignore[misc]


_NUMBER_METHODS = frozenset({"item", "tolist", "argmax", "float", "accuracy_score", "accuracy"})


def _first_model_call(calls: list[ast.Call]) -> ast.Call | None:
    for call in calls:
        if isinstance(call.func, (ast.Name, ast.Attribute)) and looks_like_model(call.func):
            if call.args or call.keywords:
                return call
    return None


def _protection(
    facts: ModuleFacts, scope: ast.AST, model_call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> tuple[bool, bool]:
    """(switched to eval mode, gradients off) for this forward pass: in its scope, or at a call site of its
    function anywhere in the project (one level up)."""
    evaluated, grad_off = _scope_switches(facts, scope)
    grad_off = grad_off or facts.under_grad_disabled(model_call) or _module_disables_grad_globally(facts)
    if evaluated or function is None:
        return evaluated, grad_off
    callers = _call_sites(facts, function)
    for caller, call in callers:  # any protecting caller is taken as the intended use (precision first)
        evaluated = evaluated or _switched_before(caller, call)
        grad_off = grad_off or caller.under_grad_disabled(call)
    return evaluated, grad_off


def _switched_before(facts: ModuleFacts, call: ast.Call) -> bool:
    """The caller's scope switches a model to eval mode (itself or through a helper) before this call, or in a loop
    around it (so before the call's next run); an ``export()`` that calls eval() at the end of the script does not
    protect the evaluations of the epochs before it."""
    scope = facts.scope_of.get(call, facts.tree)
    where = position(call)
    around = {id(loop) for loop in facts.enclosing_loops(call)}
    for node, at, loops in _eval_switches_in(facts, scope):
        if node is not call and (at < where or loops & around):
            return True
    return False


def _eval_switches_in(facts: ModuleFacts, scope: ast.AST) -> list[tuple[ast.Call, tuple[int, int], set[int]]]:
    """The scope's calls that switch a model to eval (directly or through a helper), with their position and the
    loops around them; computed once per scope."""
    key = ("eval-switches", id(scope))
    found = facts.memo.get(key)
    if found is None:
        found = [
            (node, position(node), {id(loop) for loop in facts.enclosing_loops(node)})
            for node in facts.local_nodes(scope)
            if isinstance(node, ast.Call)
            and (eval_mode_call(node) or any(s.eval_receivers for s in facts.helpers_called(node)))
        ]
        facts.memo[key] = found
    return found  # type: ignore[return-value]


def _call_sites(
    facts: ModuleFacts, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[tuple[ModuleFacts, ast.Call]]:
    if facts.project is not None:
        return facts.project.call_sites(function)
    return [(facts, c) for c in facts.calls if _called_name(c) == function.name]


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _scope_switches(facts: ModuleFacts, scope: ast.AST) -> tuple[bool, bool]:
    """(puts a model in eval mode, freezes or disables gradients) somewhere in the scope, or through a helper."""
    key = ("scope-switches", id(scope))
    cached = facts.memo.get(key)
    if cached is None:
        cached = facts.memo[key] = _find_scope_switches(facts, scope)
    return cached  # type: ignore[return-value]


def _find_scope_switches(facts: ModuleFacts, scope: ast.AST) -> tuple[bool, bool]:
    evaluated = grad_off = False
    for node in facts.local_nodes(scope):
        if isinstance(node, ast.Call):
            if eval_mode_call(node):
                evaluated = True
            elif method(node) == "requires_grad_":
                grad_off = True
            for summary in facts.helpers_called(node):
                evaluated = evaluated or bool(summary.eval_receivers)
                grad_off = grad_off or summary.grad_disabled
    return evaluated, grad_off


def _module_disables_grad_globally(facts: ModuleFacts) -> bool:
    key = ("grad-disabled-globally",)
    if key not in facts.memo:
        facts.memo[key] = any(
            isinstance(facts.parents.get(call), ast.Expr) and is_grad_disabling(call) for call in facts.calls
        )
    return bool(facts.memo[key])


def _no_grad_fix(
    facts: ModuleFacts, loop: LoopFacts | None, function: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> Fix | None:
    torch = facts.torch_alias
    if torch is None:
        return None
    if function is not None and EVAL_FUNCTION_WORDS & set(words(function.name)):
        has_backward = any(
            isinstance(n, ast.Call) and method(n) in ("backward", "manual_backward")
            for n in facts.local_nodes(function)
        )
        if not has_backward:
            return make_fix(
                t("Decorate {0}() with @{1}.no_grad()", function.name, torch),
                [insert_line_before(facts, function, f"@{torch}.no_grad()")],
            )
    if loop is None:
        return None
    return make_fix(
        t("Run this evaluation loop under {0}.no_grad()", torch),
        [wrap_in_block(facts, loop.node, f"with {torch}.no_grad():")],
    )


# ----------------------------------------------------------------------------------------------------------- TS103
def check_back_to_train(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    reported: set[int] = set()
    # a loop that trains itself, or through a helper (``train_one_epoch(model, ...)`` from another file)
    training_loops = [lf for lf in facts.loops if (lf.backwards and lf.steps) or _trains_through_helper(facts, lf)]
    # innermost first, so a periodic eval inside the batch loop is judged by the batch loop
    training_loops.sort(key=lambda lf: len(facts.enclosing_loops(lf.node)), reverse=True)
    for loop in training_loops:
        if _restores_train(facts, loop):
            continue
        for node, model_text, helper in _eval_switches(facts, loop):
            if id(node) in reported:
                continue
            reported.add(id(node))
            if not _is_trained(facts, model_text):
                continue
            if helper is not None:
                message = t(
                    "{helper}() switches {model} to eval() and this training loop never calls "
                    "{model}.train(): from the next iteration on it trains with dropout off and frozen "
                    "batch-norm statistics",
                    helper=helper,
                    model=model_text,
                )
            else:
                message = t(
                    "{model}.eval() is never undone in this training loop: from the next iteration on "
                    "{model} trains with dropout off and frozen batch-norm statistics; call "
                    "{model}.train() before the training steps",
                    model=model_text,
                )
            fix = _train_fix(facts, loop, node, model_text)
            yield EVAL_NEVER_BACK_TO_TRAIN.finding(path, facts.span(node), message, fix)


def _trains_through_helper(facts: ModuleFacts, loop: LoopFacts) -> bool:
    return any(summary.trains for call in loop.calls for summary in facts.helpers_called(call))


def _restores_train(facts: ModuleFacts, loop: LoopFacts) -> bool:
    for call in loop.calls:
        if train_mode_call(call):
            return True
        if any(summary.restores_train for summary in facts.helpers_called(call)):
            return True
    return False


def _eval_switches(facts: ModuleFacts, loop: LoopFacts) -> Iterator[tuple[ast.Call, str, str | None]]:
    for call in loop.calls:
        if eval_mode_call(call):
            recv = receiver(call)
            if recv is not None:
                yield call, text_of(recv), None
            continue
        for summary in facts.helpers_called(call):
            if summary.restores_train:
                continue
            for eval_text in summary.eval_receivers:
                mapped = _map_to_caller(summary, call, eval_text) or _same_global(facts, summary, eval_text)
                if mapped is not None:
                    yield call, mapped, summary.node.name


def _map_to_caller(summary: FunctionSummary, call: ast.Call, eval_text: str) -> str | None:
    """Translate ``model.eval()`` inside ``def evaluate(model, ...)`` into the argument the caller passed."""
    head, dot, rest = eval_text.partition(".")
    if head == "self" and isinstance(call.func, ast.Attribute) and text_of(call.func.value) != "self":
        # ``evaluator.run()`` whose method switches ``self.model``: the caller's ``evaluator.model``
        return text_of(call.func.value) + (dot + rest if dot else "")
    if head not in summary.params:
        return eval_text if head == "self" else None
    index = summary.params.index(head)
    if summary.params and summary.params[0] == "self" and isinstance(call.func, ast.Attribute):
        index -= 1
    argument: ast.expr | None = None
    if 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        argument = call.args[index]
    else:
        argument = next((k.value for k in call.keywords if k.arg == head), None)
    if argument is None:
        return None
    return text_of(argument) + (dot + rest if dot else "")


def _same_global(facts: ModuleFacts, summary: FunctionSummary, eval_text: str) -> str | None:
    """``model.eval()`` in a function of this module that reads the global ``model`` (not a parameter, not bound in
    the function): the caller's ``model`` too."""
    head = eval_text.partition(".")[0]
    if head == "self" or head in summary.params or summary.node not in facts.local_functions(summary.node.name):
        return None
    if head in facts.assignments.of(summary.node):
        return None
    return eval_text


def _is_trained(facts: ModuleFacts, model_text: str) -> bool:
    root = root_name(ast.parse(model_text, mode="eval").body) if model_text else None
    if facts.trained_roots:
        return root in facts.trained_roots
    if FROZEN_WORDS & set(words(model_text)):
        return False
    return looks_like_model(ast.parse(model_text, mode="eval").body)


def _train_fix(facts: ModuleFacts, loop: LoopFacts, switch: ast.Call, model_text: str):  # type: ignore[no-untyped-def]
    body = loop.node.body
    eval_index = _body_index(facts, loop.node, switch)
    backward_index = min(
        (i for i in (_body_index(facts, loop.node, b.call) for b in loop.backwards) if i is not None), default=None
    )
    if eval_index is None or backward_index is None or eval_index == backward_index:
        return None
    target = body[0] if eval_index > backward_index else body[backward_index]
    return make_fix(
        t("Call {0}.train() before the training steps", model_text),
        [insert_line_before(facts, target, f"{model_text}.train()")],
    )


def _body_index(facts: ModuleFacts, loop: ast.AST, node: ast.AST) -> int | None:
    body = getattr(loop, "body", [])
    current: ast.AST = node
    for parent in facts.ancestors(node):
        if parent is loop:
            return body.index(current) if current in body else None
        current = parent
    return None
