"""The Python side's translations (core/l10n): every message the code passes to ``t`` (or marks for it) has a Spanish
entry with the same placeholders, no entry is left over, the language follows TENSORSIGHT_LOCALE or the editor's
locale, English stays the default and nothing raises. The real processes are checked elsewhere: the server over
stdio (tests/server/test_spanish.py), the doctor subprocess (tests/cli/test_doctor_spanish.py)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.paths import REPO
from tensorsight.core import l10n, protocol, rules
from tensorsight.core.l10n import placeholders, t

PACKAGE = Path(REPO) / "pyhelpers" / "tensorsight"
CATALOGUE = PACKAGE / "l10n" / "es.json"


def message_ids() -> dict[str, str]:
    """Every literal first argument of ``t(...)``, ``l10n.t(...)`` and ``mark(...)`` in the package -> where, plus the
    rules' one-line whys (``RuleInfo.why``, translated where a finding is made)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "l10n"
                else None
            )
            first = node.args[0]
            if name in ("t", "mark") and isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.setdefault(first.value, f"{path.relative_to(PACKAGE)}:{node.lineno}")
    for rule in rules.RULES:
        found.setdefault(rule.why, f"rule {rule.code}")
    return found


@pytest.fixture()
def spanish() -> Iterator[None]:
    l10n.set_language("es")
    yield
    l10n.set_language(None)


def test_the_code_uses_many_messages_and_the_collector_sees_the_kinds_of_call():
    ids = message_ids()
    assert len(ids) > 100
    assert " (found when {0}, at {1})" in ids  # t("...", ...)
    assert "TensorSight · training loop — run it with Debug Training to see where each step's time goes" in ids  # mark
    assert rules.RULES[0].why in ids


def test_every_message_has_a_spanish_entry_with_the_same_placeholders():
    catalogue = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    missing = {message: where for message, where in message_ids().items() if message not in catalogue}
    assert missing == {}, "add these to pyhelpers/tensorsight/l10n/es.json"
    wrong = {k: v for k, v in catalogue.items() if placeholders(k) != placeholders(v) or not v.strip()}
    assert wrong == {}


def test_no_spanish_entry_is_left_over_from_a_message_the_code_no_longer_says():
    catalogue = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    assert sorted(set(catalogue) - set(message_ids())) == []


def test_the_catalogue_is_the_vscode_bundle_format():
    text = CATALOGUE.read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in data.items())
    assert text == json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"  # stable diffs


def test_no_function_that_translates_binds_t_itself():
    # ``for t in tensors:`` in a function that also calls t(...) makes t local there: the call would fail
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def stores(node: ast.AST, inside: bool = False) -> Iterator[int]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            scoped = inside or isinstance(child, comprehensions)
            if isinstance(child, ast.Name) and child.id == "t" and isinstance(child.ctx, ast.Store) and not scoped:
                yield child.lineno
            if isinstance(child, ast.arg) and child.arg == "t":
                yield child.lineno
            yield from stores(child, scoped)

    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "t" for n in ast.walk(fn)
            ):
                bad += [f"{path.relative_to(PACKAGE)}:{line}" for line in stores(fn)]
                bad += [f"{path.relative_to(PACKAGE)}:{fn.lineno}" for a in fn.args.args if a.arg == "t"]
    assert bad == []


@pytest.mark.parametrize(
    ("locale", "language"),
    [("es", "es"), ("es-ES", "es"), ("es_419", "es"), ("ES", "es"), ("en-US", "en"), ("", "en"), (None, "en")],
)
def test_the_language_of_a_locale(locale, language):
    assert l10n.language_of(locale) == language


def test_english_is_the_default_and_unchanged():
    l10n.set_language(None)
    assert l10n.current_language() == "en"
    assert t("step {0}", 3) == "step 3"
    assert t(" (found when {0}, at {1})", "backward()", "train.py:9") == " (found when backward(), at train.py:9)"


def test_spanish_fills_positional_and_named_placeholders(spanish):
    assert l10n.current_language() == "es"
    assert t("step {0}", 3) == "paso 3"
    assert t("{what} — {context}, at {where}", what="x", context="forward, paso 2", where="train.py:9") == (
        "x — forward, paso 2, en train.py:9"
    )


def test_a_message_without_an_entry_and_an_unknown_language_fall_back_to_english(spanish):
    assert t("a message nobody translated: {0}", 1) == "a message nobody translated: 1"
    assert l10n.set_language("xx-YY") == "en"
    assert t("step {0}", 3) == "step 3"


def test_translating_never_raises():
    assert t("step {0}") == "step {0}"  # a missing value leaves the placeholder
    assert t("{name} and {0}", name="a") == "a and {0}"
    assert t("dict {key: 1} stays {", key="x") == "dict {key: 1} stays {"

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert t("value {0}", Unprintable()) == "value {0}"
    assert l10n.load_catalogue("es", Path("/nonexistent")) == {}
    assert l10n.load_catalogue("../es") == {}


def test_the_rules_speak_spanish_and_english_is_untouched(spanish):
    source = "import torch\nfor x in data:\n    loss = model(x)\n    loss.backward()\n    optimizer.step()\n"
    (finding,) = rules.analyze(source, "/project/train.py")
    assert finding.message.startswith("backward() suma en .grad y nada en este bucle lo pone a cero")
    assert finding.details["fix"]["title"] == "Poner a cero los gradientes antes de backward(): optimizer.zero_grad()"
    l10n.set_language(None)
    (finding,) = rules.analyze(source, "/project/train.py")
    assert finding.message.startswith("backward() adds into .grad and nothing in this loop clears it")


def test_a_process_takes_its_language_from_the_environment():
    # the agent's and the tools' way: the extension sets TENSORSIGHT_LOCALE from vscode.env.language
    script = "from tensorsight.core.l10n import t, current_language; print(current_language(), t('step {0}', 4))"
    env = {"PYTHONPATH": str(PACKAGE.parent), protocol.ENV_LOCALE: "es-MX"}
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(PACKAGE.parent)!r})\n{script}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "es paso 4"
