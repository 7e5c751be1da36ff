"""Static silent-bug rules over Python source: ``analyze(source, path)`` and ``analyze_project(source, path, read)``.

Called by the language server (diagnostics and quick fixes in the editor) and by the headless doctor, so both report
the same findings. Pure: no I/O, no imports of torch; one ``ast.parse`` and a few linear walks per file.

``analyze_project`` follows the script's imports into the project's own files (``project.load_project``: parsed,
never imported; ``read`` is the caller's, so the caller decides what may be read): the rules then see a trainer
class in ``trainer.py`` or a ``train_one_epoch`` in ``engine.py``, report in those files, and judge the script's
calls with what those files do (an imported ``evaluate()`` that calls ``model.eval()``, a model class with dropout).

Each rule has a stable code, a one-line why, and (where a plain text edit is safe) a quick fix in
``details["fix"]`` = ``{"title", "edits": [{"line", "column", "endLine", "endColumn", "newText"}]}`` (1-based
lines, 0-based character columns). ``details["range"]`` is the span to underline. Precision comes first: each rule
reports only the patterns it can tell apart from correct training code, and the correct-loop corpus in the tests
must stay silent.

Silence a finding with a comment on its line: ``# tensorsight: ignore`` or ``# tensorsight: ignore[TS104]``.

=====  ================================  ===============  ========  ==========================================
code   name                              kind             severity  pattern
=====  ================================  ===============  ========  ==========================================
TS101  gradients-never-cleared           training-logic   warning   loop with backward()+step(), no zero_grad
TS102  evaluation-in-training-mode       training-logic   warning   eval loop without eval() and no_grad()
TS103  eval-never-back-to-train          training-logic   warning   eval() in a training loop, never train()
TS104  graph-accumulated-across-steps    training-logic   warning   ``total += loss`` without .item()
TS105  softmax-into-cross-entropy        training-logic   warning   softmax/log_softmax fed to cross_entropy
TS106  normalisation-leakage             leakage          warning   scaler fitted before the split / on test
TS107  hidden-state-not-detached         training-logic   warning   RNN state fed back without .detach()
TS108  step-before-backward              training-logic   warning   optimizer.step() before backward()
TS109  cleared-before-step               training-logic   warning   zero_grad() between backward() and step()
TS110  breakpoint-left-in-code           training-logic   warning   breakpoint() / pdb.set_trace() left in
TS111  hard-coded-cuda                   device           warning   .cuda() mixed with a device variable
TS112  dataloader-main-process           performance      info      training DataLoader with num_workers=0
TS113  sigmoid-into-bce-with-logits      training-logic   warning   sigmoid fed to BCEWithLogitsLoss
=====  ================================  ===============  ========  ==========================================

Across calls and files: TS101 also covers a step function (backward and step per call) called from a loop that
never clears gradients, hand-written SGD (``p -= lr * p.grad``, itself or in a helper) and a ``zero_grad()`` in
only one branch of an ``if``; TS102 covers evaluation helpers without a loop, and requires eval() even under no_grad
when the model has dropout or batch norm (``model_classes``: known from the project's model classes, else not
assumed); TS103 follows eval() down call chains of any depth (loop -> train_iter -> test -> eval) and up through
callbacks registered with a trainer in another file; TS104 follows the loss through step helpers, ``logits, loss =
model(x, y)``, ``outputs["loss"]`` and ``optimizer.step(closure)``, and an accumulator kept between calls (``global
running``, ``self.total``); TS105 and TS113 follow the loss's input back through the data flow (``flow.trace``:
assignments, tuple unpacking, views, subscripts, returns, models and parameters across files); TS106 reads tuple
assignments and slice or index splits.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from tensorsight.core.findings import Finding
from tensorsight.core.rules import evaluation, gradients, graph_retention, hygiene, leakage, losses
from tensorsight.core.rules.facts import ModuleFacts
from tensorsight.core.rules.fixes import apply_fix
from tensorsight.core.rules.model import Fix, RuleInfo, TextEdit
from tensorsight.core.rules.project import Reader, load_project

Check = Callable[[ModuleFacts, str], Iterable[Finding]]

RULES: tuple[RuleInfo, ...] = (
    gradients.GRADIENTS_NEVER_CLEARED,
    evaluation.EVAL_WITHOUT_EVAL_MODE,
    evaluation.EVAL_NEVER_BACK_TO_TRAIN,
    graph_retention.GRAPH_ACCUMULATED,
    losses.SOFTMAX_INTO_CROSS_ENTROPY,
    leakage.NORMALISATION_LEAKAGE,
    graph_retention.HIDDEN_NOT_DETACHED,
    gradients.STEP_BEFORE_BACKWARD,
    gradients.CLEARED_BEFORE_STEP,
    hygiene.BREAKPOINT_LEFT,
    hygiene.HARD_CODED_CUDA,
    hygiene.MAIN_PROCESS_LOADING,
    losses.SIGMOID_INTO_BCE_WITH_LOGITS,
)

CHECKS: tuple[Check, ...] = (
    gradients.check,
    evaluation.check_evaluation_mode,
    evaluation.check_back_to_train,
    graph_retention.check_accumulation,
    graph_retention.check_hidden_state,
    losses.check,
    leakage.check,
    hygiene.check_breakpoints,
    hygiene.check_hard_coded_cuda,
    hygiene.check_main_process_loading,
    losses.check_sigmoid,
)

_TRAINING_IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:torch|lightning|pytorch_lightning|sklearn|accelerate|transformers)\b",
    re.MULTILINE,
)
_IGNORE = re.compile(r"#\s*tensorsight:\s*ignore(?:\[([A-Za-z0-9_, ]+)\])?", re.IGNORECASE)


def is_training_source(source: str) -> bool:
    """True for code the rules are meant for: it imports torch (or Lightning, scikit-learn, Accelerate, ...)."""
    return _TRAINING_IMPORT.search(source) is not None


def analyze(source: str, path: str, *, strict: bool = False) -> list[Finding]:
    """Every rule's findings on ``source`` alone (``path`` is only recorded in the findings), sorted by line.

    Source that does not parse yields no findings (the editor already shows the syntax error). A rule that fails
    on odd code is skipped so the others still report, unless ``strict`` (the tests) asks for the error.
    """
    return analyze_project(source, path, _read_nothing, strict=strict)


def analyze_project(
    source: str, path: str, read: Reader, roots: Iterable[str] = (), *, strict: bool = False
) -> list[Finding]:
    """The findings on ``source`` and on the project files its imports reach (each finding's ``file`` says which;
    ``read(path)`` gives a file's source or None; ``roots``: more folders absolute imports resolve from, e.g. the
    workspace). The entry's findings come first, then each other file's, each sorted by line."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError):
        return []
    facts = ModuleFacts(source, tree)
    project = load_project(path, facts, read, roots)
    found: list[Finding] = []
    for module in project.modules.values():
        module_path = path if module.facts is facts else module.path
        found.extend(_checked(module.facts, module_path, strict))
    return found


def _read_nothing(path: str) -> None:
    return None


def _checked(facts: ModuleFacts, path: str, strict: bool) -> list[Finding]:
    found: list[Finding] = []
    for check in CHECKS:
        try:
            found.extend(check(facts, path))
        except Exception:
            if strict:
                raise
    kept = [f for f in found if not _silenced(facts.lines, f)]
    return sorted(kept, key=lambda f: (f.line, f.details.get("code", "")))


def training_loops(source: str) -> list[tuple[int, int]]:
    """(first line, last line) of each outermost loop that calls backward() and an optimizer step, for code lenses."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    facts = ModuleFacts(source, tree)
    training = [lf for lf in facts.loops if lf.backwards and lf.steps]
    inner = {id(node) for lf in training for node in lf.nodes if node is not lf.node}
    return [(lf.node.lineno, lf.node.end_lineno or lf.node.lineno) for lf in training if id(lf.node) not in inner]


def _silenced(lines: list[str], finding: Finding) -> bool:
    if not 0 < finding.line <= len(lines):
        return False
    match = _IGNORE.search(lines[finding.line - 1])
    if match is None:
        return False
    if match.group(1) is None:
        return True
    codes = {c.strip().upper() for c in match.group(1).split(",")}
    return str(finding.details.get("code", "")).upper() in codes


__all__ = [
    "CHECKS",
    "RULES",
    "Fix",
    "RuleInfo",
    "TextEdit",
    "analyze",
    "analyze_project",
    "apply_fix",
    "is_training_source",
    "training_loops",
]
