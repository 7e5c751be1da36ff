"""Rules about leftovers and set-up: a debugger stop left in code (TS110), a hard-coded ``.cuda()`` in code that
otherwise follows a device variable (TS111), and a training DataLoader that loads in the main process (TS112).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    ModuleFacts,
    dotted,
    last_name,
    method,
    names_in,
    position,
    receiver,
    text_of,
    words,
)
from tensorsight.core.rules.fixes import make_fix, owns_lines, remove_statement
from tensorsight.core.rules.model import RuleInfo, TextEdit

BREAKPOINT_LEFT = RuleInfo(
    "TS110",
    "breakpoint-left-in-code",
    "training-logic",
    "warning",
    "a debugger stop is left in the code: an unattended training run (a job, a server, CI) hangs here waiting for "
    "input; remove it, or use a conditional breakpoint in the editor",
)
HARD_CODED_CUDA = RuleInfo(
    "TS111",
    "hard-coded-cuda",
    "device",
    "warning",
    "hard-coded .cuda() in code that otherwise follows a device variable: on a CPU-only machine this line fails, and "
    "on another GPU index it puts the tensor on a different device than the rest",
)
MAIN_PROCESS_LOADING = RuleInfo(
    "TS112",
    "dataloader-main-process",
    "performance",
    "info",
    "this training DataLoader loads and collates every batch in the main process (num_workers=0), so each step waits "
    "for data; try num_workers=2-8 (keep the entry point under `if __name__ == '__main__':`) and compare the data "
    "phase in the phase breakdown",
)

_DEBUGGER_MODULES = frozenset({"pdb", "ipdb", "pudb", "pdbpp", "wdb", "web_pdb", "remote_pdb"})
_GUARD_WORDS = frozenset({"debug", "debugging", "pdb", "interactive", "breakpoint", "breakpoints"})


# ----------------------------------------------------------------------------------------------------------- TS110
def check_breakpoints(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    shadowed = facts.defines_function("breakpoint")
    for node in facts.calls:
        if not _is_debugger_stop(node, shadowed):
            continue
        if _guarded(facts, node, _GUARD_WORDS):
            continue
        fix = _removal_fix(facts, node)
        message = t(
            "{0} is left in the code: an unattended training run (a job, a server, CI) hangs here "
            "waiting for input; remove it, or use a conditional breakpoint in the editor",
            text_of(node),
        )
        yield BREAKPOINT_LEFT.finding(path, facts.span(node), message, fix)


def _is_debugger_stop(call: ast.Call, shadowed: bool) -> bool:
    if isinstance(call.func, ast.Name):
        return call.func.id == "breakpoint" and not shadowed
    name = method(call)
    owner = receiver(call)
    if name == "set_trace":
        if isinstance(owner, ast.Call) and last_name(owner.func) == "__import__" and owner.args:
            first = owner.args[0]
            return isinstance(first, ast.Constant) and first.value in _DEBUGGER_MODULES
        return dotted(owner) in _DEBUGGER_MODULES
    if name == "breakpoint":
        return dotted(owner) == "debugpy"
    return name == "embed" and dotted(owner) == "IPython"


def _guarded(facts: ModuleFacts, node: ast.AST, guard_words: frozenset[str]) -> bool:
    for parent in facts.ancestors(node):
        if isinstance(parent, (ast.If, ast.IfExp)) and guard_words & set(words(text_of(parent.test))):
            return True
    return False


def _removal_fix(facts: ModuleFacts, call: ast.Call):  # type: ignore[no-untyped-def]
    stmt = facts.statement_of(call)
    if not isinstance(stmt, ast.Expr) or stmt.value is not call:
        return None
    located = facts.block_of(stmt)
    if located is None:
        return None
    block, index = located
    previous = block[index - 1] if index > 0 else None
    paired_import = (
        isinstance(previous, ast.Import)
        and previous.lineno == stmt.lineno
        and all(alias.name in _DEBUGGER_MODULES for alias in previous.names)
    )
    if paired_import and previous is not None:  # ``import pdb; pdb.set_trace()``: remove the whole line
        if not owns_lines(facts, previous) and not facts.lines[stmt.lineno - 1][: previous.col_offset].strip():
            if len(block) == 2:
                line = facts.lines[stmt.lineno - 1]
                start = facts.char_col(stmt.lineno, previous.col_offset)
                return make_fix(
                    t("Remove the debugger stop"), [TextEdit(stmt.lineno, start, stmt.lineno, len(line), "pass")]
                )
            if stmt.lineno < len(facts.lines):
                return make_fix("Remove the debugger stop", [TextEdit(stmt.lineno, 0, stmt.lineno + 1, 0, "")])
        return None
    return make_fix("Remove the debugger stop", [remove_statement(facts, stmt)])


# ----------------------------------------------------------------------------------------------------------- TS111
def check_hard_coded_cuda(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    cuda_calls = [c for c in facts.calls if method(c) == "cuda" and receiver(c) is not None]
    if not cuda_calls:
        return
    device = _device_variable(facts)
    if device is None:
        return
    for node in cuda_calls:
        if _guarded_by_cuda_check(facts, node):
            continue
        if any(not isinstance(arg, ast.Constant) for arg in [*node.args, *(k.value for k in node.keywords)]):
            continue  # ``.cuda(device)`` / ``.cuda(args.gpu)`` follows a variable: not hard-coded
        fix = None
        if not node.args and not node.keywords and _visible(facts, node, device):
            recv = receiver(node)
            assert recv is not None
            start = facts.span(recv)
            end = facts.span(node)
            edit = TextEdit(start.end_line, start.end_column, end.end_line, end.end_column, f".to({device})")
            fix = make_fix(t("Use .to({0}) like the rest of the code", device), [edit])
        message = t(
            "hard-coded .cuda() while the rest of the code moves tensors with .to({0}): on a "
            "CPU-only machine this line fails, and on another GPU index it lands on a different device",
            device,
        )
        yield HARD_CODED_CUDA.finding(path, facts.span(node), message, fix)


def _device_variable(facts: ModuleFacts) -> str | None:
    """The expression most ``.to(...)`` calls pass, if it is a device variable (``device``, ``args.device``)."""
    counts: dict[str, int] = {}
    device_like = _device_bindings(facts)
    for node in facts.calls:
        if method(node) != "to" or receiver(node) is None:
            continue
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
        if not isinstance(given, (ast.Name, ast.Attribute)):
            continue
        key = text_of(given)
        if key in device_like or _names_a_device_variable(given):
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda k: counts[k])


_SETTINGS_OWNERS = frozenset({"self", "args", "cfg", "config", "conf", "opt", "opts", "hparams", "settings", "flags"})


def _names_a_device_variable(node: ast.expr) -> bool:
    """``device``, ``DEVICE``, ``self.device``, ``args.device`` — not ``tensor.device`` (that follows the data)."""
    if isinstance(node, ast.Name):
        return "device" in node.id.lower()
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return "device" in node.attr.lower() and node.value.id.lower() in _SETTINGS_OWNERS
    return False


def _device_bindings(facts: ModuleFacts) -> set[str]:
    found: set[str] = set()
    for node in facts.assigns:
        if isinstance(node.value, (ast.Call, ast.IfExp, ast.Constant, ast.JoinedStr)) and _names_a_device(node.value):
            found.update(text_of(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
    return found


def _names_a_device(value: ast.expr) -> bool:
    """``torch.device(...)``, ``"cuda" if torch.cuda.is_available() else "cpu"``, ``"cuda:0"``."""
    for inner in ast.walk(value):
        if isinstance(inner, ast.Call) and last_name(inner.func) in ("device", "is_available"):
            return True
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.startswith("cuda"):
            return True
    return False


def _guarded_by_cuda_check(facts: ModuleFacts, node: ast.AST) -> bool:
    for parent in facts.ancestors(node):
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)):
            test = text_of(parent.test).lower()
            if "cuda" in test or "gpu" in test:
                return True
    return False


def _visible(facts: ModuleFacts, node: ast.AST, device: str) -> bool:
    """The device expression's root name is bound where ``node`` runs (a parameter, a local or a module global)."""
    root = device.split(".", 1)[0]
    function = facts.enclosing_function(node)
    while function is not None:
        params = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
        if root in params or facts.assignments.of(function).get(root):
            return True
        function = facts.enclosing_function(function)
    for pos, _, _ in facts.assignments.of(facts.tree).get(root, []):
        if facts.enclosing_function(node) is not None or pos < position(node):
            return True
    return False


# ----------------------------------------------------------------------------------------------------------- TS112
def check_main_process_loading(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    in_memory = _in_memory_datasets(facts)
    for node in facts.calls:
        if last_name(node.func) != "DataLoader":
            continue
        if any(k.arg is None for k in node.keywords):
            continue  # **kwargs: cannot see num_workers
        workers = next((k.value for k in node.keywords if k.arg == "num_workers"), None)
        if workers is not None and not (isinstance(workers, ast.Constant) and workers.value == 0):
            continue
        if len(node.args) >= 7:
            continue  # passed positionally
        dataset = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dataset"), None)
        if dataset is None or not _is_training_loader(facts, node, dataset):
            continue
        if _loads_from_memory(dataset, in_memory):
            continue  # a TensorDataset is already in memory: workers would only add overhead
        yield MAIN_PROCESS_LOADING.finding(path, facts.span(node))


def _is_training_loader(facts: ModuleFacts, call: ast.Call, dataset: ast.expr) -> bool:
    dataset_words = set(words(text_of(dataset)))
    stmt = facts.statement_of(call)
    target_words: set[str] = set()
    if isinstance(stmt, ast.Assign) and stmt.value is call:
        target_words = {w for t in stmt.targets for w in words(text_of(t))}
    shuffled = any(
        k.arg == "shuffle" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
    )
    held_out = {"val", "valid", "validation", "test", "eval", "dev"}
    if held_out & (dataset_words | target_words) and "train" not in dataset_words | target_words:
        return False
    return "train" in dataset_words or "train" in target_words or shuffled


def _in_memory_datasets(facts: ModuleFacts) -> set[str]:
    """Names bound to a TensorDataset, or to a split/subset of one."""
    found: set[str] = set()
    assigns = [n for n in facts.assigns if isinstance(n.value, ast.Call)]
    for _ in range(2):  # a split of a subset of a TensorDataset is still in memory
        for node in assigns:
            assert isinstance(node.value, ast.Call)
            callee = last_name(node.value.func)
            derived = callee in ("random_split", "Subset", "ConcatDataset") and names_in(node.value) & found
            if callee == "TensorDataset" or derived:
                found.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return found


def _loads_from_memory(dataset: ast.expr, in_memory: set[str]) -> bool:
    if isinstance(dataset, ast.Call) and last_name(dataset.func) == "TensorDataset":
        return True
    return bool(names_in(dataset) & in_memory) or text_of(dataset) in in_memory
