"""Static silent-bug rules (tensorsight.core.rules): each rule fires exactly where its fixture says, the corpus of
correct training loops stays silent, and every quick fix applies cleanly (the result parses and the finding is gone).

Fixtures: tests/fixtures/rules/tsNNN_*.py mark each expected finding with ``# expect: TSNNN`` on its line;
tests/fixtures/correct_loops/*.py are realistic, correct training code in several styles.
"""

from __future__ import annotations

import ast
import glob
import os
import re

import pytest

from support.paths import REPO
from tensorsight.core.findings import KINDS, SEVERITIES
from tensorsight.core.rules import RULES, Fix, analyze, apply_fix, is_training_source, training_loops

RULE_FIXTURES = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "rules", "ts*.py")))
CORRECT_LOOPS = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "correct_loops", "*.py")))
EXPECT = re.compile(r"# expect: (TS\d{3})")


def expected_findings(source: str) -> set[tuple[int, str]]:
    return {(n, code) for n, line in enumerate(source.split("\n"), 1) for code in EXPECT.findall(line)}


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_every_rule_has_a_fixture_and_metadata():
    codes = {rule.code for rule in RULES}
    assert len(codes) == len(RULES) == 12
    fixture_codes = {os.path.basename(p)[:5].upper() for p in RULE_FIXTURES}
    assert fixture_codes == codes
    for rule in RULES:
        assert rule.kind in KINDS and rule.severity in SEVERITIES
        assert rule.why and "\n" not in rule.why


@pytest.mark.parametrize("path", RULE_FIXTURES, ids=os.path.basename)
def test_rule_fires_exactly_where_expected(path):
    source = read(path)
    expected = expected_findings(source)
    assert expected, "a rule fixture must mark at least one expected finding"
    found = analyze(source, path, strict=True)
    assert {(f.line, f.details["code"]) for f in found} == expected
    for finding in found:
        assert finding.file == path
        assert finding.details["range"]["line"] == finding.line
        assert finding.message


@pytest.mark.parametrize("path", CORRECT_LOOPS, ids=os.path.basename)
def test_correct_training_code_gets_no_finding(path):
    assert analyze(read(path), path, strict=True) == []


def test_the_correct_corpus_covers_the_styles_it_promises():
    names = {os.path.basename(p) for p in CORRECT_LOOPS}
    for style in (
        "classic_loop.py",
        "set_to_none.py",
        "grad_accumulation.py",
        "amp_scaler.py",
        "rnn_detach.py",
        "eval_no_grad.py",
        "lightning_like.py",
        "logging_and_losses.py",
    ):
        assert style in names


def fixable_findings():
    for path in RULE_FIXTURES:
        source = read(path)
        for finding in analyze(source, path, strict=True):
            if "fix" in finding.details:
                yield pytest.param(
                    path, finding.line, finding.details["code"], id=f"{os.path.basename(path)}:{finding.line}"
                )


@pytest.mark.parametrize(("path", "line", "code"), list(fixable_findings()))
def test_quick_fix_applies_cleanly_and_removes_the_finding(path, line, code):
    source = read(path)
    finding = next(f for f in analyze(source, path, strict=True) if f.line == line and f.details["code"] == code)
    fixed = apply_fix(source, Fix.from_dict(finding.details["fix"]))
    ast.parse(fixed)  # still valid Python
    assert fixed != source
    remaining = {(f.details["code"], f.line) for f in analyze(fixed, path, strict=True)}
    others = {(f.details["code"], f.line) for f in analyze(source, path, strict=True)} - {(code, line)}
    # the fixed finding is gone and nothing new appeared (lines may shift by the inserted/removed lines)
    assert len(remaining) == len(others)
    assert code not in {c for c, _ in remaining} or len([c for c, _ in others if c == code]) == len(
        [c for c, _ in remaining if c == code]
    )


def test_fixes_exist_for_the_rules_where_a_text_edit_is_safe():
    fixed_codes = {code for _, _, code in (p.values for p in fixable_findings())}
    assert {"TS101", "TS102", "TS103", "TS104", "TS105", "TS107", "TS108", "TS109", "TS110", "TS111"} <= fixed_codes


def test_expected_fix_texts():
    """The fixes say what a reviewer would write by hand."""
    cases = {
        "ts101_gradients_never_cleared.py": "        optimizer.zero_grad()\n",
        "ts104_graph_accumulated.py": "    total_loss += loss.item()  # expect: TS104",
        "ts107_hidden_not_detached.py": "    output, hidden = rnn(chunk, hidden.detach())  # expect: TS107",
        "ts111_hard_coded_cuda.py": "    labels = torch.randint(0, 2, (8,)).to(device)  # expect: TS111",
        "ts102_evaluation_in_training_mode.py": "@torch.no_grad()\ndef validate(model, loader):",
    }
    for name, snippet in cases.items():
        path = os.path.join(REPO, "tests", "fixtures", "rules", name)
        source = read(path)
        first = next(f for f in analyze(source, path, strict=True) if "fix" in f.details)
        assert snippet in apply_fix(source, Fix.from_dict(first.details["fix"]))


def test_fix_positions_count_characters_not_bytes():
    source = (
        "import torch\n"
        "model = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "hist = []\n"
        "for i in range(3):\n"
        "    opt.zero_grad()\n"
        "    loss = torch.nn.functional.mse_loss(model(torch.ones(1, 2)), torch.zeros(1, 1))\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    ü = 1; hist.append(loss)  # café\n"
    )
    (finding,) = analyze(source, "unicode.py", strict=True)
    assert finding.details["code"] == "TS104" and finding.details["range"]["column"] == 11  # after "    ü = 1; "
    fixed = apply_fix(source, Fix.from_dict(finding.details["fix"]))
    assert "    ü = 1; hist.append(loss.item())  # café\n" in fixed


def test_silencing_comment():
    path = RULE_FIXTURES[0]
    source = read(path).replace("# expect: TS101", "# tensorsight: ignore[TS101]")
    assert analyze(source, path, strict=True) == []
    source = read(path).replace("# expect: TS101", "# tensorsight: ignore[TS104]")
    assert len(analyze(source, path, strict=True)) == 1


def test_unparsable_and_non_training_source():
    assert analyze("def broken(:\n", "x.py") == []
    assert not is_training_source("import os\nprint(1)\n")
    assert is_training_source("import numpy as np\nfrom torch import nn\n")


def test_training_loops_are_the_outermost_loops_that_step():
    source = read(os.path.join(REPO, "tests", "fixtures", "rules", "ts101_gradients_never_cleared.py"))
    ((first, last),) = training_loops(source)
    lines = source.split("\n")
    assert lines[first - 1].startswith("for epoch in range(3):")
    assert "print(" in lines[last - 1]


def test_gan_style_clearing_of_another_model_is_not_cleared_before_step():
    source = read(os.path.join(REPO, "tests", "fixtures", "correct_loops", "dcgan_two_optimizers.py"))
    # the same loop with the generator's grads cleared *after* the discriminator's backward but where the
    # discriminator itself is cleared there: that is the real bug
    buggy = source.replace(
        "        errD = errD_real + errD_fake\n", "        errD = errD_real + errD_fake\n        netD.zero_grad()\n"
    )
    assert buggy != source
    codes = [(f.details["code"]) for f in analyze(buggy, "gan.py", strict=True)]
    assert codes == ["TS109"]
