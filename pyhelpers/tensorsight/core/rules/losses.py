"""Rule TS105: softmax (or log_softmax) fed into CrossEntropyLoss / F.cross_entropy.

``cross_entropy`` applies ``log_softmax`` itself. Feeding it probabilities squashes the logits twice: the loss can no
longer approach 0 and the gradients shrink, so training stalls without any error (a warning). Feeding it
log-probabilities gives the same loss (log_softmax is idempotent), only wasted work (information). Found three ways:
the softmax written inside the loss call, a variable assigned from a softmax, or a model whose ``forward`` returns one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import ModuleFacts, dotted, last_name, position, receiver, text_of
from tensorsight.core.rules.fixes import make_fix, replace_node
from tensorsight.core.rules.model import RuleInfo

SOFTMAX_INTO_CROSS_ENTROPY = RuleInfo(
    "TS105",
    "softmax-into-cross-entropy",
    "training-logic",
    "warning",
    "cross_entropy applies log_softmax itself: feeding it softmax probabilities squashes twice, so the loss cannot "
    "approach 0 and gradients shrink; pass the raw logits",
)
_SOFTMAX_NAMES = {"softmax": "Softmax", "log_softmax": "LogSoftmax"}
_SOFTMAX_MODULES = {"Softmax": "softmax", "LogSoftmax": "log_softmax"}


def check(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    criteria = _cross_entropy_objects(facts)
    loss_calls = [c for c in facts.calls if _is_cross_entropy_call(c, criteria)]
    if not loss_calls:
        return
    softmax_models = _softmax_models(facts)
    for node in loss_calls:
        scope = facts.scope_of.get(node)
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "input"), None)
        if given is None or scope is None:
            continue
        finding = _direct(facts, path, node, given) or _via_name(facts, path, scope, node, given)
        if finding is None:
            finding = _via_model(facts, path, scope, node, given, softmax_models)
        if finding is not None:
            yield finding


def softmax_kind(node: ast.AST, facts: ModuleFacts | None = None, owner: ast.ClassDef | None = None) -> str | None:
    """ "softmax" / "log_softmax" for ``F.softmax(x)``, ``x.softmax(1)``, ``nn.Softmax(1)(x)``, ``self.sm(x)``."""
    if not isinstance(node, ast.Call):
        return None
    name = last_name(node.func)
    if name in _SOFTMAX_NAMES:
        return name
    if isinstance(node.func, ast.Call) and last_name(node.func.func) in _SOFTMAX_MODULES:
        return _SOFTMAX_MODULES[last_name(node.func.func) or ""]
    if owner is not None and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        if node.func.value.id == "self":
            return _self_attribute_softmax(owner, node.func.attr)
    return None


def _softmax_input(call: ast.Call) -> ast.expr | None:
    if isinstance(call.func, ast.Attribute) and last_name(call.func) in _SOFTMAX_NAMES:
        recv = receiver(call)
        if recv is not None and last_name(recv) not in ("F", "functional", "torch", "special", "nn"):
            return recv  # logits.softmax(dim=1)
    return call.args[0] if call.args else None


def _cross_entropy_objects(facts: ModuleFacts) -> set[str]:
    """Texts bound to ``nn.CrossEntropyLoss(...)`` anywhere in the module (``criterion``, ``self.loss_fn``)."""
    found: set[str] = set()
    for node in facts.assigns:
        if isinstance(node.value, ast.Call):
            if last_name(node.value.func) == "CrossEntropyLoss":
                found.update(text_of(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
    return found


def _is_cross_entropy_call(call: ast.Call, criteria: set[str]) -> bool:
    if last_name(call.func) == "cross_entropy":
        return True
    if isinstance(call.func, ast.Call) and last_name(call.func.func) == "CrossEntropyLoss":
        return True
    return (dotted(call.func) or "") in criteria


def _message(kind: str, how: str) -> tuple[str, str]:
    if kind == "log_softmax":
        return (
            t(
                "{0} log_softmax output goes into cross_entropy, which applies log_softmax again: the loss is the "
                "same, the work is wasted; pass the raw logits (or use nll_loss)",
                how,
            ),
            "info",
        )
    return (
        t(
            "{0} softmax probabilities go into cross_entropy, which applies log_softmax itself: squashed twice, the "
            "loss cannot approach 0 and gradients shrink; pass the raw logits",
            how,
        ),
        "warning",
    )


def _direct(facts: ModuleFacts, path: str, loss_call: ast.Call, given: ast.expr) -> Finding | None:
    kind = softmax_kind(given)
    if kind is None:
        return None
    message, severity = _message(kind, t("here"))
    logits = _softmax_input(given) if isinstance(given, ast.Call) else None
    fix = None
    if logits is not None:
        fix = make_fix(
            t("Pass the logits ({0}) to the loss", text_of(logits)), [replace_node(facts, given, text_of(logits))]
        )
    return SOFTMAX_INTO_CROSS_ENTROPY.finding(path, facts.span(given), message, fix, severity)


def _via_name(facts: ModuleFacts, path: str, scope: ast.AST, loss_call: ast.Call, given: ast.expr) -> Finding | None:
    if not isinstance(given, ast.Name):
        return None
    found = facts.assignments.last_before(scope, given.id, position(loss_call))  # type: ignore[arg-type]
    if found is None or found[1] is None:
        return None
    kind = softmax_kind(found[1])
    if kind is None:
        return None
    line = getattr(found[0], "lineno", 0)
    message, severity = _message(kind, t("{0} holds {1} output (line {2}):", given.id, kind, line))
    return SOFTMAX_INTO_CROSS_ENTROPY.finding(path, facts.span(given), message, None, severity)


def _via_model(
    facts: ModuleFacts,
    path: str,
    scope: ast.AST,
    loss_call: ast.Call,
    given: ast.expr,
    softmax_models: dict[str, tuple[str, str, int]],
) -> Finding | None:
    model_call = given
    if isinstance(given, ast.Name):
        found = facts.assignments.last_before(scope, given.id, position(loss_call))  # type: ignore[arg-type]
        model_call = found[1] if found is not None and found[1] is not None else given
    if not isinstance(model_call, ast.Call) or not isinstance(model_call.func, (ast.Name, ast.Attribute)):
        return None
    model_text = text_of(model_call.func)
    if model_text not in softmax_models:
        return None
    class_name, kind, line = softmax_models[model_text]
    message, severity = _message(
        kind, t("{0} ({1}) ends in {2} (line {3}), so its", model_text, class_name, kind, line)
    )
    return SOFTMAX_INTO_CROSS_ENTROPY.finding(path, facts.span(given), message, None, severity)


def _softmax_models(facts: ModuleFacts) -> dict[str, tuple[str, str, int]]:
    """Model texts bound to an instance whose output is a softmax: text -> (class, kind, line of the softmax)."""
    producing: dict[str, tuple[str, int]] = {}
    for cls in facts.classes:
        forward = next(
            (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"),
            None,
        )
        if forward is None:
            continue
        returns = [n for n in facts.local_nodes(forward) if isinstance(n, ast.Return)]
        kinds = [softmax_kind(r.value, facts, cls) if r.value is not None else None for r in returns]
        if returns and all(kinds) and len(set(kinds)) == 1:  # every path ends in it (not only at inference)
            first = min(returns, key=position)
            producing[cls.name] = (str(kinds[0]), first.lineno)
    found: dict[str, tuple[str, str, int]] = {}
    for node in facts.assigns:
        if not isinstance(node.value, ast.Call):
            continue
        callee = last_name(node.value.func) or ""
        result: tuple[str, str, int] | None = None
        if callee in producing:
            result = (callee, *producing[callee])
        elif callee == "Sequential" and node.value.args:
            tail = node.value.args[-1]
            if isinstance(tail, ast.Call) and last_name(tail.func) in _SOFTMAX_MODULES:
                result = ("Sequential", _SOFTMAX_MODULES[last_name(tail.func) or ""], tail.lineno)
        if result is not None:
            for target in node.targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    found[text_of(target)] = result
    return found


def _self_attribute_softmax(owner: ast.ClassDef, attr: str) -> str | None:
    """``self.<attr>`` assigned ``nn.Softmax(...)`` / ``nn.LogSoftmax(...)`` somewhere in the class."""
    for node in ast.walk(owner):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name):
                module = last_name(node.value.func)
                if target.value.id == "self" and module in _SOFTMAX_MODULES:
                    return _SOFTMAX_MODULES[module or ""]
    return None
