"""Rules about the order of ``zero_grad`` / ``backward`` / ``step`` in a training loop (TS101, TS108, TS109).

``backward()`` adds into ``.grad``; ``step()`` applies whatever is there. The three silent bugs: gradients never
cleared (every step applies the sum of all earlier gradients), the step taken before the backward that should feed it,
and the gradients cleared between backward and step (the step applies nothing).

Gradients never cleared are reported where the clearing belongs: at the ``backward()`` when a step applies exactly
one backward's gradients (its fix inserts ``zero_grad()`` right above it), at the step otherwise (accumulation, a
closure, several backwards per step). The run-time check (``agent/measurement/gradient_clearing.py``) places its
finding the same way, so the two merge into one problem.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import replace

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    BackwardCall,
    LoopFacts,
    ModuleFacts,
    StepCall,
    backward_call,
    is_grad_clearing,
    manual_update,
    method,
    position,
    receiver,
    root_name,
    text_of,
)
from tensorsight.core.rules.fixes import insert_line_after, insert_line_before, make_fix, move_statement_after
from tensorsight.core.rules.model import RuleInfo

GRADIENTS_NEVER_CLEARED = RuleInfo(
    "TS101",
    "gradients-never-cleared",
    "training-logic",
    "warning",
    "gradients are never cleared in this loop: backward() adds into .grad, so each step applies the sum of every "
    "earlier step's gradients; call optimizer.zero_grad() once per step",
    seen_at_runtime_as="training-logic",
    seen_at_runtime_check="gradients-never-cleared",
)
STEP_BEFORE_BACKWARD = RuleInfo(
    "TS108",
    "step-before-backward",
    "training-logic",
    "warning",
    "optimizer.step() runs before loss.backward() in this loop: each step applies stale (or zero) gradients and the "
    "new ones are cleared or applied one iteration late; call backward() first",
)
CLEARED_BEFORE_STEP = RuleInfo(
    "TS109",
    "cleared-before-step",
    "training-logic",
    "warning",
    "zero_grad() between backward() and step() wipes the gradients just computed, so the step changes nothing; "
    "clear gradients before backward() or after step()",
)


def check(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    for loop in _innermost_training_loops(facts):
        yield from _never_cleared(facts, path, loop)
        yield from _step_before_backward(facts, path, loop)
        yield from _cleared_before_step(facts, path, loop)
    yield from _step_helpers_never_cleared(facts, path)
    yield from _hand_written_steps_never_cleared(facts, path)


def _innermost_training_loops(facts: ModuleFacts) -> list[LoopFacts]:
    """Loops that hold a backward and an optimizer step, and no inner loop holding both."""
    candidates = [lf for lf in facts.loops if lf.backwards and lf.steps]
    holding = {id(outer) for lf in candidates for outer in facts.enclosing_loops(lf.node)}
    return [lf for lf in candidates if id(lf.node) not in holding]


def _clears_gradients(facts: ModuleFacts, loop: LoopFacts) -> bool:
    return bool(_clearings(facts, loop))


def _clearings(facts: ModuleFacts, loop: LoopFacts) -> list[ast.AST]:
    """The loop's gradient clearings (nodes, or calls of helpers that clear)."""
    found = [node for node in loop.nodes if is_grad_clearing(node)]
    found += [call for call in loop.calls if any(summary.clears_grad for summary in facts.helpers_called(call))]
    return found


def _one_sided_branch(
    facts: ModuleFacts, loop: LoopFacts, clearings: list[ast.AST], steps: list[ast.AST]
) -> ast.If | None:
    """The ``if`` that every clearing sits in one branch of, while the steps run outside it and its other branch
    clears nothing (``if epoch % 2 == 0: opt.zero_grad()`` before an unconditional ``opt.step()``), else None.
    A clearing under the same condition as its step (gradient accumulation) or in both branches is a clearing."""
    if any(_conditional(facts, loop.node, step) for step in steps):
        return None  # a conditional step (gradient accumulation, an AMP branch): the pairing is not judged
    found: ast.If | None = None
    for clearing in clearings:
        branch_if = _conditioning_if(facts, loop, clearing, steps, clearings)
        if branch_if is None:
            return None
        found = found or branch_if
    return found


def _conditional(facts: ModuleFacts, container: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` runs only on some passes through ``container`` (a loop or a function): under an if/try."""
    for parent in facts.ancestors(node):
        if parent is container:
            return False
        if isinstance(parent, (ast.If, ast.Try, ast.IfExp)):
            return True
    return False


def _repeated(facts: ModuleFacts, container: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` sits in a loop nested in ``container``: it may run several times per pass."""
    for parent in facts.ancestors(node):
        if parent is container:
            return False
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            return True
    return False


def _conditioning_if(
    facts: ModuleFacts, loop: LoopFacts, node: ast.AST, steps: list[ast.AST], clearings: list[ast.AST]
) -> ast.If | None:
    current: ast.AST = node
    for parent in facts.ancestors(node):
        if parent is loop.node:
            return None
        if isinstance(parent, ast.If) and current is not parent.test:
            branch = parent.body if current in parent.body else parent.orelse
            other = parent.orelse if branch is parent.body else parent.body
            inside = {id(n) for stmt in branch for n in ast.walk(stmt)}
            if any(id(step) in inside for step in steps):
                return None  # cleared under the same condition as the step
            other_nodes = {id(n) for stmt in other for n in ast.walk(stmt)}
            if not any(id(c) in other_nodes for c in clearings):
                return parent
        current = parent
    return None


def _never_cleared(facts: ModuleFacts, path: str, loop: LoopFacts) -> Iterator[Finding]:
    clearings = _clearings(facts, loop)
    branch = _one_sided_branch(facts, loop, clearings, [s.call for s in loop.steps]) if clearings else None
    if clearings and branch is None:
        yield from _optimizers_never_cleared(facts, path, loop)
        return
    step = loop.steps[0]
    if branch is not None:
        message = t(
            "{optimizer}.step() runs every iteration but gradients are cleared only in one branch of the if on "
            "line {line}: in the other iterations backward() adds into .grad, so those steps use the sum of "
            "earlier gradients; clear them unconditionally, once per step",
            optimizer=step.optimizer,
            line=branch.lineno,
        )
        yield GRADIENTS_NEVER_CLEARED.finding(path, facts.span(step.call), message)
        return
    stmt = facts.statement_of(step.call)
    anchor = stmt
    located = facts.block_of(stmt)
    if located is not None:  # after ``scaler.step(opt)`` comes ``scaler.update()``: clear after both
        block, index = located
        if index + 1 < len(block) and _is_scaler_update(block[index + 1]):
            anchor = block[index + 1]
    backward = _lone_backward(facts, loop.node, loop.backwards, [s.call for s in loop.steps])
    if backward is not None:
        message = t(
            "backward() adds into .grad and nothing in this loop clears it: each {optimizer}.step() (line {line}) "
            "applies the sum of every earlier step's gradients; call {optimizer}.zero_grad() right before backward()",
            optimizer=step.optimizer,
            line=step.call.lineno,
        )
        yield _at_backward(facts, path, backward, step, message)
        return
    fix = None
    if isinstance(stmt, ast.Expr) and stmt.value is step.call:
        fix = make_fix(
            t("Clear gradients after each step: {0}.zero_grad()", step.optimizer),
            [insert_line_after(facts, anchor, f"{step.optimizer}.zero_grad()")],
        )
    message = t(
        "{optimizer}.step() applies gradients that nothing in this loop clears: backward() adds into .grad, "
        "so each step uses the sum of every earlier step's gradients; call {optimizer}.zero_grad() once per step",
        optimizer=step.optimizer,
    )
    yield GRADIENTS_NEVER_CLEARED.finding(path, facts.span(step.call), message, fix)


def _lone_backward(
    facts: ModuleFacts, container: ast.AST, backwards: list[BackwardCall], applying: list[ast.AST]
) -> BackwardCall | None:
    """The one ``backward()`` that feeds every node of ``applying`` (the ``step()`` calls, or a hand-written update) in
    ``container`` (a loop or a step function), else None.

    Where a step applies exactly one backward's gradients (the plain ``zero_grad, backward, step`` loop with its
    ``zero_grad`` lost), the uncleared gradients are written by that backward, and the clearing belongs right above
    it: the finding goes there, as the run-time check places it (one backward between two steps). Accumulation (a
    conditional step, several backwards per step) keeps the finding at the step, which is where the windows meet."""
    if len(backwards) != 1 or not applying:
        return None
    backward = backwards[0]
    if _conditional(facts, container, backward.call) or any(_conditional(facts, container, a) for a in applying):
        return None
    if _repeated(facts, container, backward.call):
        return None  # micro-batches: one backward() written, several per step
    if any(position(a) < position(backward.call) for a in applying):
        return None
    return backward


def _at_backward(facts: ModuleFacts, path: str, backward: BackwardCall, step: StepCall, message: str) -> Finding:
    """TS101 at the lone backward() whose gradients ``step`` applies uncleared, with its fix right above it."""
    fix = make_fix(
        t("Clear gradients before backward(): {0}.zero_grad()", step.optimizer),
        [insert_line_before(facts, facts.statement_of(backward.call), f"{step.optimizer}.zero_grad()")],
    )
    finding = GRADIENTS_NEVER_CLEARED.finding(path, facts.span(backward.call), message, fix)
    return replace(finding, details={**finding.details, "step_line": step.call.lineno})


def _optimizers_never_cleared(facts: ModuleFacts, path: str, loop: LoopFacts) -> Iterator[Finding]:
    """Several optimizers step in the loop (a GAN's discriminator and generator) and only some have their gradients
    cleared: ``netD.zero_grad()`` does nothing for ``optimizerG``. Judged only when every clearing in the loop is a
    plain ``x.zero_grad()`` and each optimizer's model is known from its constructor (precision first)."""
    stepped: dict[str, StepCall] = {}
    for step in loop.steps:
        stepped.setdefault(step.optimizer, step)
    if len(stepped) < 2:
        return
    cleared: set[str] = set()
    receivers: list[str] = []
    for node in loop.nodes:
        if not is_grad_clearing(node):
            continue
        parent = facts.parents.get(node)
        if not (isinstance(node, ast.Attribute) and node.attr == "zero_grad" and isinstance(parent, ast.Call)):
            return  # ``p.grad = None``, a clearing through a reference: what it clears is not known
        receivers.append(text_of(node.value))
        cleared.add(receivers[-1])
        root = root_name(node.value)
        if root:
            cleared.add(root)
    if any(summary.clears_grad for call in loop.calls for summary in facts.helpers_called(call)):
        return
    for optimizer, step in stepped.items():
        roots = facts.optimized_roots.get(optimizer)
        if not roots or optimizer in cleared or roots & cleared:
            continue
        others = ", ".join(f"{text}.zero_grad()" for text in dict.fromkeys(receivers))
        stmt = facts.statement_of(step.call)
        fix = None
        if isinstance(stmt, ast.Expr) and stmt.value is step.call:
            fix = make_fix(
                t("Clear gradients after each step: {0}.zero_grad()", optimizer),
                [insert_line_after(facts, stmt, f"{optimizer}.zero_grad()")],
            )
        message = t(
            "{optimizer}.step() applies gradients that nothing in this loop clears: the loop clears other models' "
            "gradients ({others}), not those of {models}, so each {optimizer} step uses the sum "
            "of every earlier step's gradients; call {optimizer}.zero_grad() once per step",
            optimizer=optimizer,
            others=others,
            models=", ".join(sorted(roots)),
        )
        yield GRADIENTS_NEVER_CLEARED.finding(path, facts.span(step.call), message, fix)


def _step_helpers_never_cleared(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    """TS101 for a step function (``def train_step(batch)``: backward() and step() once per call, no loop of its own
    holding both) that never clears gradients, called from a loop (in any file of the project) that does not clear
    them either: the training loop runs through the call."""
    for function in facts.scopes:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = facts.local_nodes(function)
        calls = sorted((n for n in nodes if isinstance(n, ast.Call)), key=position)
        steps = [s for s in (facts.step_call(c) for c in calls) if s is not None]
        if not steps or not any(backward_call(c) is not None for c in calls):
            continue
        if any(lf.scope is function and lf.backwards and lf.steps for lf in facts.loops):
            continue  # its own loop is judged as a loop
        if any(is_grad_clearing(n) for n in nodes) or any(
            s.clears_grad for c in calls for s in facts.helpers_called(c)
        ):
            continue
        looped = _looped_call_sites(facts, function)
        if not looped or any(_clears_gradients(caller, caller.loop_facts(loop)) for caller, _, loop in looped):
            continue
        caller, call, _ = looped[0]
        step = steps[0]
        where = t("line {0}", call.lineno) if caller is facts else f"{_file_name(caller)}:{call.lineno}"
        backwards = [b for b in (backward_call(c) for c in calls) if b is not None]
        backward = _lone_backward(facts, function, backwards, [s.call for s in steps])
        if backward is not None:
            message = t(
                "backward() adds into .grad and nothing clears it: {function}() runs once per iteration of the loop "
                "at {where}, and each {optimizer}.step() (line {line}) applies the sum of every earlier step's "
                "gradients; call {optimizer}.zero_grad() right before backward()",
                function=function.name,
                where=where,
                optimizer=step.optimizer,
                line=step.call.lineno,
            )
            yield _at_backward(facts, path, backward, step, message)
            continue
        stmt = facts.statement_of(step.call)
        fix = None
        if isinstance(stmt, ast.Expr) and stmt.value is step.call:
            fix = make_fix(
                t("Clear gradients after each step: {0}.zero_grad()", step.optimizer),
                [insert_line_after(facts, stmt, f"{step.optimizer}.zero_grad()")],
            )
        message = t(
            "{optimizer}.step() in {function}() applies gradients that nothing clears: {function}() "
            "is called once per iteration of the loop at {where}, and backward() adds into .grad, so each step "
            "uses the sum of every earlier step's gradients; call {optimizer}.zero_grad() once per step",
            optimizer=step.optimizer,
            function=function.name,
            where=where,
        )
        yield GRADIENTS_NEVER_CLEARED.finding(path, facts.span(step.call), message, fix)


def _hand_written_steps_never_cleared(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    """TS101 for hand-written SGD: a loop with backward() and no optimizer step that updates parameters from their
    ``.grad`` (``p -= lr * p.grad``, itself or through a helper) and never clears ``.grad``."""
    candidates: list[tuple[LoopFacts, ast.AST]] = []
    for loop in facts.loops:
        if not loop.backwards or loop.steps:
            continue
        update = next((n for n in loop.nodes if manual_update(n)), None)
        if update is None:
            update = next((c for c in loop.calls if any(s.updates_by_hand for s in facts.helpers_called(c))), None)
        if update is not None:
            candidates.append((loop, update))
    holding = {id(outer) for loop, _ in candidates for outer in facts.enclosing_loops(loop.node)}
    for loop, update in candidates:
        if id(loop.node) in holding:
            continue  # judged at the innermost loop that backpropagates and updates
        if not any(position(b.call) < position(update) for b in loop.backwards):
            continue  # the update does not apply this loop's backward (e.g. it comes first, from a primed grad)
        clearings = _clearings(facts, loop)
        branch = _one_sided_branch(facts, loop, clearings, [update]) if clearings else None
        if clearings and branch is None:
            continue
        backward = _lone_backward(facts, loop.node, loop.backwards, [update])
        update_line = facts.span(update).line
        if backward is not None:  # as for an optimizer: at the one backward() each update applies
            message = t(
                "backward() adds into .grad and nothing in the loop clears it: the hand-written update at line {line} "
                "applies the sum of every earlier step's gradients; clear them right before this backward() "
                "(model.zero_grad()) or after the update (p.grad = None)",
                line=update_line,
            )
            finding = GRADIENTS_NEVER_CLEARED.finding(path, facts.span(backward.call), message)
            yield replace(finding, details={**finding.details, "update_line": update_line})
            continue
        message = t(
            "this hand-written update applies .grad that nothing in the loop clears: backward() adds into .grad, so "
            "each update uses the sum of every earlier step's gradients; set p.grad = None (or p.grad.zero_()) "
            "after each update"
        )
        yield GRADIENTS_NEVER_CLEARED.finding(path, facts.span(update), message)


def _looped_call_sites(
    facts: ModuleFacts, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[tuple[ModuleFacts, ast.Call, ast.AST]]:
    """(module, call, innermost loop around it) for each call of ``function`` made inside a loop."""
    if facts.project is not None:
        sites = facts.project.call_sites(function)
    else:
        sites = [(facts, c) for c in facts.calls if method(c) == function.name]
    out: list[tuple[ModuleFacts, ast.Call, ast.AST]] = []
    for caller, call in sites:
        loops = caller.enclosing_loops(call)
        if loops:
            out.append((caller, call, loops[0]))
    return out


def _file_name(facts: ModuleFacts) -> str:
    module = facts.project.module_of(facts) if facts.project is not None else None
    return os.path.basename(module.path) if module is not None else "another file"


def _is_scaler_update(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    recv = receiver(stmt.value)
    return method(stmt.value) == "update" and recv is not None and "scaler" in text_of(recv).lower()


def _step_before_backward(facts: ModuleFacts, path: str, loop: LoopFacts) -> Iterator[Finding]:
    first_step = min(loop.steps, key=lambda s: position(s.call))
    first_backward = min(loop.backwards, key=lambda b: position(b.call))
    if position(first_step.call) > position(first_backward.call):
        return
    step_stmt = facts.statement_of(first_step.call)
    backward_stmt = facts.statement_of(first_backward.call)
    step_block = facts.block_of(step_stmt)
    backward_block = facts.block_of(backward_stmt)
    if step_block is None or backward_block is None or step_block[0] is not backward_block[0]:
        return  # only the unambiguous case: both in one straight-line block
    if _backward_primed_before(facts, loop):
        return  # a backward() before the loop feeds the first step: a deliberate "step first" rotation
    fix = None
    if isinstance(step_stmt, ast.Expr) and isinstance(backward_stmt, ast.Expr):
        fix = make_fix(
            t("Move {0}.step() after the backward() call", first_step.optimizer),
            move_statement_after(facts, step_stmt, backward_stmt),  # type: ignore[arg-type]
        )
    yield STEP_BEFORE_BACKWARD.finding(path, facts.span(first_step.call), None, fix)


def _backward_primed_before(facts: ModuleFacts, loop: LoopFacts) -> bool:
    start = position(loop.node)
    for node in facts.scope_nodes(loop.scope):
        if isinstance(node, ast.Call) and position(node) < start and backward_call(node) is not None:
            if node not in loop.nodes:
                return True
    return False


def _cleared_before_step(facts: ModuleFacts, path: str, loop: LoopFacts) -> Iterator[Finding]:
    """backward ... zero_grad ... step, siblings in one block, nothing re-filling .grad in between."""
    stepped = {step.optimizer for step in loop.steps}
    for step in loop.steps:
        step_stmt = facts.statement_of(step.call)
        located = facts.block_of(step_stmt)
        if located is None:
            continue
        block, step_index = located
        clear_index = None
        for index in range(step_index - 1, -1, -1):
            stmt = block[index]
            if _has_backward(stmt):
                break
            if _zero_grad_target(stmt) is not None:
                clear_index = index
                break
        if clear_index is None:
            continue
        if not any(_has_backward(stmt) for stmt in block[:clear_index]):
            continue
        clear_stmt = block[clear_index]
        target = _zero_grad_target(clear_stmt)
        same_optimizer = target == step.optimizer
        its_model = target is not None and target in facts.optimized_roots.get(step.optimizer, set())
        lone_optimizer = (
            target is not None
            and not facts.is_optimizer_text(target)
            and len(stepped) == 1
            and not facts.optimized_roots.get(step.optimizer)
        )
        if not (same_optimizer or its_model or lone_optimizer):
            continue  # e.g. GAN code clearing the generator's grads before the discriminator's step
        assert isinstance(clear_stmt, ast.Expr)
        clear_call = clear_stmt.value
        fix = make_fix(
            t("Move {0} after {1}.step()", text_of(clear_call), step.optimizer),
            move_statement_after(facts, clear_stmt, step_stmt),
        )
        yield CLEARED_BEFORE_STEP.finding(path, facts.span(clear_call), None, fix)


def _has_backward(stmt: ast.stmt) -> bool:
    return any(isinstance(node, ast.Call) and backward_call(node) is not None for node in ast.walk(stmt))


def _zero_grad_target(stmt: ast.stmt) -> str | None:
    """``opt`` for a statement that is exactly ``opt.zero_grad(...)``."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and method(stmt.value) == "zero_grad":
        recv = receiver(stmt.value)
        if recv is not None:
            return text_of(recv)
    return None
