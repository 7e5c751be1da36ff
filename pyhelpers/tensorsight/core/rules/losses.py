"""Rules TS105 and TS113: an activation fed into a loss that applies it itself.

TS105: softmax (or log_softmax) fed into CrossEntropyLoss / F.cross_entropy. ``cross_entropy`` applies
``log_softmax`` itself. Feeding it probabilities squashes the logits twice: the loss can no longer approach 0 and the
gradients shrink, so training stalls without any error (a warning). Feeding it log-probabilities gives the same loss
(log_softmax is idempotent), only wasted work (information). TS113: sigmoid fed into BCEWithLogitsLoss /
F.binary_cross_entropy_with_logits, which applies sigmoid itself (the same double squashing, a warning).

Found wherever the loss's input comes from: the activation written inside the loss call (reported there, with a
quick fix), or reached through the data flow ``flow.trace`` follows: a variable, ``.view()``/``.reshape()``, a
subscript (``output[mask]``), a ``forward`` that assigns it before ``return``, a model built in another file and
called in a trainer there. A reached activation is reported where it is applied (the line that wrote the wrong
value, in its own file), naming the loss call it reaches; an activation feeding several losses is reported once.
The loss object is recognised as built (``criterion = nn.CrossEntropyLoss()``, or passed to a trainer's
``__init__``). Log-softmax into ``nll_loss`` and sigmoid used only for metrics are what they should be.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import ModuleFacts, last_name, position, receiver, text_of
from tensorsight.core.rules.fixes import make_fix, replace_node
from tensorsight.core.rules.flow import Origin, built_by, trace
from tensorsight.core.rules.model import RuleInfo

SOFTMAX_INTO_CROSS_ENTROPY = RuleInfo(
    "TS105",
    "softmax-into-cross-entropy",
    "training-logic",
    "warning",
    "cross_entropy applies log_softmax itself: feeding it softmax probabilities squashes twice, so the loss cannot "
    "approach 0 and gradients shrink; pass the raw logits",
)
SIGMOID_INTO_BCE_WITH_LOGITS = RuleInfo(
    "TS113",
    "sigmoid-into-bce-with-logits",
    "training-logic",
    "warning",
    "BCEWithLogitsLoss applies sigmoid itself: feeding it sigmoid probabilities squashes twice, so the loss cannot "
    "approach 0 and gradients shrink; pass the raw logits (or use BCELoss)",
)


def check(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    """TS105: softmax or log_softmax reaching cross_entropy's input."""
    yield from _activation_into_loss(facts, path, _CROSS_ENTROPY)


def check_sigmoid(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    """TS113: sigmoid reaching BCEWithLogitsLoss's input."""
    yield from _activation_into_loss(facts, path, _BCE_WITH_LOGITS)


@dataclass(frozen=True)
class _LossFamily:
    """A loss that applies its own squashing, and the activations that must not come before it."""

    rule: RuleInfo
    functions: frozenset[str]  # ``F.cross_entropy``
    classes: frozenset[str]  # ``nn.CrossEntropyLoss``
    activations: dict[str, str]  # function or method name -> kind
    modules: dict[str, str]  # module class -> kind


_CROSS_ENTROPY = _LossFamily(
    SOFTMAX_INTO_CROSS_ENTROPY,
    frozenset({"cross_entropy"}),
    frozenset({"CrossEntropyLoss"}),
    {"softmax": "softmax", "log_softmax": "log_softmax"},
    {"Softmax": "softmax", "LogSoftmax": "log_softmax"},
)
_BCE_WITH_LOGITS = _LossFamily(
    SIGMOID_INTO_BCE_WITH_LOGITS,
    frozenset({"binary_cross_entropy_with_logits"}),
    frozenset({"BCEWithLogitsLoss"}),
    {"sigmoid": "sigmoid", "expit": "sigmoid"},
    {"Sigmoid": "sigmoid"},
)
_LOSS_OBJECT_NAME = re.compile(r"loss|crit|objective", re.IGNORECASE)


def _activation_into_loss(facts: ModuleFacts, path: str, family: _LossFamily) -> Iterator[Finding]:
    criteria = _loss_objects(facts, family)
    placed: set[tuple[str, int, int]] = set()  # an activation feeding several losses (training and validation): once
    for node in facts.calls:
        scope = facts.scope_of.get(node)
        if scope is None or not _is_loss_call(facts, node, scope, family, criteria):
            continue
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "input"), None)
        if given is None:
            continue
        direct = _kind(Origin(facts, given, None), family) if isinstance(given, ast.Call) else None
        if direct is not None and isinstance(given, ast.Call):
            yield _direct(facts, path, given, direct, family)
            continue
        origin = trace(facts, given, scope, position(node), lambda o: _kind(o, family) is not None)
        if origin is not None:
            finding = _via_flow(facts, path, given, origin, family)
            place = (finding.file, finding.line, int(finding.details["range"]["column"]))
            if place not in placed:
                placed.add(place)
                yield finding


def _kind(origin: Origin, family: _LossFamily) -> str | None:
    """The activation ``origin`` applies: ``F.softmax(x)``, ``x.softmax(1)``, ``nn.Softmax(1)(x)``, ``self.sm(x)``
    (``self.sm = nn.Softmax(1)``), or the ``nn.Softmax(1)`` ending an applied Sequential."""
    node = origin.node
    if origin.constructed:
        return family.modules.get(last_name(node.func) or "")
    name = last_name(node.func)
    if name in family.activations:
        return family.activations[name or ""]
    if isinstance(node.func, ast.Call) and last_name(node.func.func) in family.modules:
        return family.modules[last_name(node.func.func) or ""]
    func = node.func
    if origin.owner is not None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self":
            return _self_attribute_module(origin.owner, func.attr, family.modules)
    return None


def _loss_objects(facts: ModuleFacts, family: _LossFamily) -> set[str]:
    """Texts bound to the loss class anywhere in the module (``criterion``, ``self.loss_fn``)."""
    found: set[str] = set()
    for node in facts.assigns:
        if isinstance(node.value, ast.Call):
            if last_name(node.value.func) in family.classes:
                found.update(text_of(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
    return found


def _is_loss_call(facts: ModuleFacts, call: ast.Call, scope: ast.AST, family: _LossFamily, criteria: set[str]) -> bool:
    func = call.func
    if last_name(func) in family.functions:
        return True
    if isinstance(func, ast.Call) and last_name(func.func) in family.classes:
        return True
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return False
    text = text_of(func)
    if text in criteria:
        return True
    if not _LOSS_OBJECT_NAME.search(last_name(func) or ""):
        return False  # only loss-like names are followed to their constructor (``self.criterion`` from a Trainer)
    return any(last_name(c.func) in family.classes for c in built_by(facts, func, scope, position(call)))


def _message(kind: str, how: str) -> tuple[str, str]:
    if kind == "sigmoid":
        return (
            t(
                "{0} sigmoid probabilities go into BCEWithLogitsLoss, which applies sigmoid itself: squashed twice, "
                "the loss cannot approach 0 and gradients shrink; pass the raw logits (or use BCELoss)",
                how,
            ),
            "warning",
        )
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


def _direct(facts: ModuleFacts, path: str, given: ast.Call, kind: str, family: _LossFamily) -> Finding:
    message, severity = _message(kind, t("here"))
    logits = _activation_input(given, family)
    fix = None
    if logits is not None:
        fix = make_fix(
            t("Pass the logits ({0}) to the loss", text_of(logits)), [replace_node(facts, given, text_of(logits))]
        )
    return family.rule.finding(path, facts.span(given), message, fix, severity)


def _via_flow(facts: ModuleFacts, path: str, given: ast.expr, origin: Origin, family: _LossFamily) -> Finding:
    """The activation reached through assignments, views, subscripts, returns and calls (maybe in another file),
    reported where it is applied: that line wrote the probabilities the loss takes for logits (a ``forward`` that
    ends in softmax is fixed there, for every caller). The loss call is named in the message and the details."""
    kind = _kind(origin, family) or ""
    module = facts.project.module_of(origin.facts) if facts.project is not None and origin.facts is not facts else None
    if origin.facts is not facts and module is None:
        return _at_loss(facts, path, given, kind, family, origin.node.lineno)
    loss_line = position(given)[0]
    loss_where = t("line {0}", loss_line) if module is None else f"{os.path.basename(path)}:{loss_line}"
    message, severity = _message(kind, t("{0} output reaches the loss as {1} ({2}):", kind, _short(given), loss_where))
    finding = family.rule.finding(
        module.path if module is not None else path, origin.facts.span(origin.node), message, None, severity
    )
    return replace(finding, details={**finding.details, "loss_file": path, "loss_line": loss_line})


def _at_loss(facts: ModuleFacts, path: str, given: ast.expr, kind: str, family: _LossFamily, line: int) -> Finding:
    """The activation's file is unknown (no project): reported at the loss, naming the activation's line."""
    message, severity = _message(kind, t("{0} holds {1} output ({2}):", _short(given), kind, t("line {0}", line)))
    return family.rule.finding(path, facts.span(given), message, None, severity)


def _short(node: ast.expr) -> str:
    text = text_of(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _activation_input(call: ast.Call, family: _LossFamily) -> ast.expr | None:
    """The tensor the activation squashes: ``logits`` in ``F.softmax(logits, 1)`` or ``logits.softmax(1)``."""
    if isinstance(call.func, ast.Call):
        return call.args[0] if call.args else None
    if last_name(call.func) not in family.activations:
        return None
    if isinstance(call.func, ast.Attribute):
        recv = receiver(call)
        if recv is not None and last_name(recv) not in ("F", "functional", "torch", "special", "nn"):
            return recv  # logits.softmax(dim=1)
    return call.args[0] if call.args else None


def _self_attribute_module(owner: ast.ClassDef, attr: str, modules: dict[str, str]) -> str | None:
    """``self.<attr>`` assigned ``nn.Softmax(...)`` (or another of ``modules``) somewhere in the class."""
    for node in ast.walk(owner):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name):
                module = last_name(node.value.func)
                if target.value.id == "self" and module in modules:
                    return modules[module or ""]
    return None
