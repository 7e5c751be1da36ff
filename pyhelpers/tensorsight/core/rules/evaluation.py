"""Rules about train/eval modes (TS102, TS103).

TS102: an evaluation loop that runs the model with neither ``model.eval()`` nor ``torch.no_grad()`` (dropout on,
batch-norm statistics updated from evaluation data, and a graph recorded for nothing). TS103: a training loop that
switches the model to ``eval()`` (directly or through a helper such as ``evaluate(model, ...)``) and never back to
``train()``, so every later epoch trains in evaluation mode.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    LOOP_TYPES,
    FunctionSummary,
    LoopFacts,
    ModuleFacts,
    ProjectLinks,
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
from tensorsight.core.rules.flow import functions_called
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
    seen_at_runtime_as="training-logic",
    seen_at_runtime_check="backward-in-eval-mode",
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
    """Each call that switches a model to eval() (``model.eval()``, or a helper that leaves it in eval mode, to any
    depth) and runs once per iteration of a training loop: the loop around it, or the loop around a call of its
    function, up the call chain and across files, callbacks registered with a trainer included. Reported at that
    call, unless the chain switches the model back to train() (in the loop, or in a function along the chain), or
    the call sits inside an evaluation helper whose own call is the one reported."""
    if not _project_switches_to_eval(facts):
        return
    for call in facts.calls:
        switched = _switched_models(facts, call)
        if not switched:
            continue
        context = _training_context(facts, call, 0, frozenset())
        if not isinstance(context, _Context):
            continue
        helper = None if eval_mode_call(call) else _called_name(call)
        for model_text in switched:
            mapped = _map_up(facts, call, context, model_text)
            judged_in = context.facts if mapped is not None else facts
            if not _is_trained(judged_in, mapped or model_text) and not _unknown_argument(context, mapped):
                continue
            yield _back_to_train_finding(facts, path, call, context, mapped or model_text, helper)
            break


_EVAL_TEXT = re.compile(r"\.(?:eval\(\s*\)|train\(\s*(?:mode\s*=\s*)?False)")


def _project_switches_to_eval(facts: ModuleFacts) -> bool:
    """Some file of the project has an ``.eval()`` (a text search, once per analysis): else TS103 has nothing to do."""
    project = facts.project
    holder = project.entry.facts if project is not None else facts
    key = ("switches-to-eval",)
    if key not in holder.memo:
        sources = [m.facts.source for m in project.modules.values()] if project is not None else [facts.source]
        holder.memo[key] = any(_EVAL_TEXT.search(source) for source in sources)
    return bool(holder.memo[key])


@dataclass
class _Context:
    """The training loop a call runs in: ``loop`` in ``facts``; ``sites``: the calls from the loop down to the
    call's function (empty when the call is in the loop's own scope)."""

    facts: ModuleFacts
    loop: LoopFacts
    sites: list[tuple[ModuleFacts, ast.Call, FunctionSummary]] = field(default_factory=list)


_RESTORED = "restored"  # a function along the chain switches back to train()
_INSIDE_EVALUATION = "inside"  # the call is inside an evaluation helper whose own call is judged


def _switched_models(facts: ModuleFacts, call: ast.Call) -> list[str]:
    """The model texts (in the call's terms) this call leaves in eval mode: ``m.eval()``, or a helper (any depth)
    that switches one and never back, and takes no training step itself."""
    if eval_mode_call(call):
        recv = receiver(call)
        return [text_of(recv)] if recv is not None else []
    out: list[str] = []
    for owner, fn in functions_called(facts, call):
        modes = _modes(owner, fn, 0, frozenset())
        if modes.trains or modes.restores:
            return []
        summary = owner.summary_of(fn)
        for text in modes.evals:
            mapped = _map_to_caller(summary, call, text)
            if mapped is None and owner is facts:
                mapped = _same_global(facts, summary, text)
            if mapped is not None and mapped not in out:
                out.append(mapped)
    return out


@dataclass
class _Modes:
    """What calling a function does to modes, through its own calls: models left in eval (in its terms), whether
    anything in it switches back to train(), whether it takes a training step."""

    evals: list[str]
    restores: bool
    trains: bool


def _modes(facts: ModuleFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, depth: int, stack: frozenset[int]) -> _Modes:
    key = ("modes", id(fn))
    cached = facts.memo.get(key)
    if isinstance(cached, _Modes):
        return cached
    summary = facts.summary_of(fn)
    modes = _Modes(list(summary.eval_receivers), summary.restores_train, summary.trains)
    if depth < 6 and id(fn) not in stack:
        inner = stack | {id(fn)}
        for node in facts.local_nodes(fn):
            if not isinstance(node, ast.Call) or eval_mode_call(node) or train_mode_call(node):
                continue
            for owner, callee in functions_called(facts, node):
                if callee is fn:
                    continue
                sub = _modes(owner, callee, depth + 1, inner)
                modes.restores = modes.restores or sub.restores
                modes.trains = modes.trains or sub.trains
                callee_summary = owner.summary_of(callee)
                for text in sub.evals:
                    mapped = _map_to_caller(callee_summary, node, text)
                    if mapped is None and owner is facts:
                        mapped = _same_global(facts, callee_summary, text)
                    if mapped is not None and mapped not in modes.evals:
                        modes.evals.append(mapped)
        facts.memo[key] = modes
    return modes


def _is_training_loop(facts: ModuleFacts, loop: LoopFacts) -> bool:
    if loop.backwards and loop.steps:
        return True
    return any(
        _modes(owner, fn, 0, frozenset()).trains for call in loop.calls for owner, fn in functions_called(facts, call)
    )


def _training_context(facts: ModuleFacts, node: ast.AST, depth: int, seen: frozenset[int]) -> _Context | str | None:
    for loop in facts.enclosing_loops(node):
        loop_facts = facts.loop_facts(loop)
        if _is_training_loop(facts, loop_facts):
            return _Context(facts, loop_facts) if not _restores_train(facts, loop_facts) else _RESTORED
    function = facts.enclosing_function(node)
    if function is None or depth > 5 or id(function) in seen:
        return None
    key = ("training-context", id(function))
    if key in facts.memo:  # one walk up per function: a helper called from many places is judged once
        return facts.memo[key]  # type: ignore[return-value]
    found = _function_context(facts, function, depth, seen | {id(function)})
    facts.memo[key] = found
    return found


def _function_context(
    facts: ModuleFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, depth: int, seen: frozenset[int]
) -> _Context | str | None:
    """The training loop a call of ``function`` runs in, through its callers (see ``_training_context``)."""
    if _modes(facts, function, 0, frozenset()).restores:
        return _RESTORED
    for caller, site in _callers(facts, function):
        if _switched_models(caller, site):
            return _INSIDE_EVALUATION
        context = _training_context(caller, site, depth + 1, seen)
        if isinstance(context, _Context):
            return _Context(context.facts, context.loop, [*context.sites, (caller, site, facts.summary_of(function))])
        if context is not None:
            return context
    return None


def _restores_train(facts: ModuleFacts, loop: LoopFacts) -> bool:
    for call in loop.calls:
        if train_mode_call(call):
            return True
        if any(_modes(owner, fn, 0, frozenset()).restores for owner, fn in functions_called(facts, call)):
            return True
    return False


def _callers(
    facts: ModuleFacts, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[tuple[ModuleFacts, ast.Call]]:
    """Where ``function`` is called from: its call sites, and for a callback handed to a trainer (``trainer.
    set_callback("on_batch_end", fn)``, ``Trainer(callbacks=[fn])``, ``loop(model, step_fn=fn)``), the trainer's
    calls of a callable it holds (``for cb in self.callbacks[event]: cb(self)``, ``step_fn(...)``)."""
    sites = _call_sites(facts, function)
    if facts.project is None:
        return sites
    for owner, receiving, param in _registrations(facts.project).get(id(function), []):
        methods = [receiving] if not isinstance(receiving, ast.ClassDef) else receiving.body
        for method_node in methods:
            if not isinstance(method_node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in owner.local_nodes(method_node):
                if not isinstance(node, ast.Call):
                    continue
                if param is not None and isinstance(node.func, ast.Name) and node.func.id == param:
                    sites.append((owner, node))
                elif param is None and _calls_held_callable(owner, method_node, node):
                    sites.append((owner, node))
    return sites


_Registration = tuple[ModuleFacts, ast.AST, str | None]


def _registrations(project: ProjectLinks) -> dict[int, list[_Registration]]:
    """Functions handed by name to a project function (id(function) -> (module, that function, the parameter that
    receives it)) or to a project class's method or constructor ((module, the class, None))."""
    entry = project.entry.facts
    key = ("callback-registrations",)
    found = entry.memo.get(key)
    if isinstance(found, dict):
        return found
    registry: dict[int, list[_Registration]] = {}
    for module in project.modules.values():
        facts = module.facts
        for call in facts.calls:
            handed = [(i, k, name) for i, k, name in _argument_names(call) if facts.defines_function(name)]
            if not handed:
                continue
            receivers: list[tuple[ModuleFacts, ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = []
            for owner, fn in functions_called(facts, call):
                parent = owner.parents.get(fn)
                receivers.append((owner, parent, None) if isinstance(parent, ast.ClassDef) else (owner, fn, fn))
            for owner, node in project.resolve_callee(facts, call.func):
                if isinstance(node, ast.ClassDef):
                    receivers.append((owner, node, None))
            for index, keyword, name in handed:
                for fn in facts.local_functions(name):
                    for owner, receiving, plain in receivers:
                        param = None
                        if plain is not None:
                            params = [a.arg for a in (*plain.args.posonlyargs, *plain.args.args)]
                            param = keyword or (params[index] if index is not None and index < len(params) else None)
                            if param is None:
                                continue
                        registry.setdefault(id(fn), []).append((owner, receiving, param))
    entry.memo[key] = registry
    return registry


def _argument_names(call: ast.Call) -> list[tuple[int | None, str | None, str]]:
    """(position, keyword, name) of the names passed to a call, list and tuple elements included."""
    out: list[tuple[int | None, str | None, str]] = []
    given: list[tuple[int | None, str | None, ast.expr]] = [(i, None, a) for i, a in enumerate(call.args)]
    given += [(None, k.arg, k.value) for k in call.keywords]
    for index, keyword, value in given:
        for element in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
            if isinstance(element, ast.Name):
                inside = isinstance(value, (ast.List, ast.Tuple))
                out.append((None if inside else index, keyword, element.id))
    return out


def _calls_held_callable(
    facts: ModuleFacts, method_node: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call
) -> bool:
    """``cb(self)`` with ``cb`` a loop variable or a parameter, or ``self.callbacks[event](self)``."""
    func = call.func
    if isinstance(func, ast.Subscript):
        return True
    if not isinstance(func, ast.Name):
        return False
    if func.id in [a.arg for a in method_node.args.args]:
        return True
    bound = facts.assignments.last_before(method_node, func.id, position(call))
    return bound is not None and isinstance(bound[0], (ast.For, ast.AsyncFor, ast.comprehension))


def _unknown_argument(context: _Context, text: str | None) -> bool:
    """The model is a parameter of the function holding the training loop (``def loop(net)``): what it is bound to
    is not known there, only that it is trained in that loop; a frozen or teacher model says so in its name."""
    function = context.facts.enclosing_function(context.loop.node)
    if text is None or function is None or FROZEN_WORDS & set(words(text)):
        return False
    return text.partition(".")[0] in [a.arg for a in function.args.args]


def _map_up(facts: ModuleFacts, call: ast.Call, context: _Context, model_text: str) -> str | None:
    """The model text in the training loop's terms, through the chain's call sites (None when it cannot be said)."""
    text: str | None = model_text
    for caller, site, summary in reversed(context.sites):  # from the call's function up to the loop
        if text is None:
            return None
        text = _map_to_caller(summary, site, text) or (_same_global(caller, summary, text) if caller is facts else None)
    return text


def _back_to_train_finding(
    facts: ModuleFacts, path: str, call: ast.Call, context: _Context, model_text: str, helper: str | None
) -> Finding:
    if context.sites:
        loop_module = context.facts.project.module_of(context.facts) if context.facts.project is not None else None
        line = context.loop.node.lineno
        where = (
            t("line {0}", line)
            if context.facts is facts
            else f"{os.path.basename(loop_module.path) if loop_module else '?'}:{line}"
        )
        chain = " -> ".join(f"{_called_name(site)}()" for _, site, _ in context.sites)
        message = t(
            "{call} switches {model} to eval() once per iteration of the training loop at {where} (through "
            "{chain}) and nothing switches it back with {model}.train(): from the next iteration on it trains with "
            "dropout off and frozen batch-norm statistics",
            call=f"{helper}()" if helper else f"{model_text}.eval()",
            model=model_text,
            where=where,
            chain=chain,
        )
        return _observed_at(
            facts, path, call, helper, EVAL_NEVER_BACK_TO_TRAIN.finding(path, facts.span(call), message)
        )
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
    fix = _train_fix(facts, context.loop, call, model_text)
    return _observed_at(
        facts, path, call, helper, EVAL_NEVER_BACK_TO_TRAIN.finding(path, facts.span(call), message, fix)
    )


def _observed_at(facts: ModuleFacts, path: str, call: ast.Call, helper: str | None, finding: Finding) -> Finding:
    """A run observes this bug where the helper switches the model to eval() (``backward-in-eval-mode``): that
    place, as ``details.observed_at``, makes the rule and the run one problem (``core.problems``)."""
    switch = _inner_switch(facts, call, 0) if helper is not None else None
    if switch is None:
        return finding
    owner, node = switch
    module = facts.project.module_of(owner) if owner is not facts and facts.project is not None else None
    where = {"file": module.path if module is not None else path, "line": node.lineno}
    return replace(finding, details={**(finding.details or {}), "observed_at": where})


def _inner_switch(facts: ModuleFacts, call: ast.Call, depth: int) -> tuple[ModuleFacts, ast.Call] | None:
    """The ``m.eval()`` a helper call reaches (the first, through its own calls up to a few levels)."""
    for owner, fn in functions_called(facts, call):
        found = _switch_in(owner, fn, depth)
        if found is not None:
            return found
    return None


def _switch_in(
    facts: ModuleFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef, depth: int
) -> tuple[ModuleFacts, ast.Call] | None:
    """The first ``m.eval()`` in ``fn`` or in what it calls; each function walked once per analysis."""
    key = ("inner-switch", id(fn))
    if key in facts.memo:
        return facts.memo[key]  # type: ignore[return-value]
    facts.memo[key] = None  # a recursive call finds nothing new
    calls = sorted((n for n in facts.local_nodes(fn) if isinstance(n, ast.Call)), key=position)
    found = next(((facts, node) for node in calls if eval_mode_call(node)), None)
    if found is None and depth < 4:
        found = next((f for f in (_inner_switch(facts, node, depth + 1) for node in calls) if f is not None), None)
    facts.memo[key] = found
    return found


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
