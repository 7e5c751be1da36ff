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
from tensorsight.core.rules import (
    RULES,
    Fix,
    analyze,
    analyze_project,
    apply_fix,
    is_training_source,
    training_loops,
)

RULE_FIXTURES = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "rules", "ts*.py")))
CORRECT_LOOPS = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "correct_loops", "*.py")))
EXPECT = re.compile(r"# expect: (TS\d{3})")


def expected_findings(source: str) -> set[tuple[int, str]]:
    return {(n, code) for n, line in enumerate(source.split("\n"), 1) for code in EXPECT.findall(line)}


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


read_file = read


def test_every_rule_has_a_fixture_and_metadata():
    codes = {rule.code for rule in RULES}
    assert len(codes) == len(RULES) == 13
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


# --------------------------------------------------------------------------------------- across the project's files
def project_reader(files: dict[str, str], asked: list[str] | None = None):
    """``read`` over an in-memory project (paths under /project); records what was asked for."""

    def read(path: str) -> str | None:
        if asked is not None:
            asked.append(path)
        return files.get(path)

    return read


TRAIN_SCRIPT = """\
import os
import numpy as np
import torch
from models import Net
from trainer import Trainer

model = Net()
trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
trainer.fit([(torch.randn(4, 8), torch.randint(0, 2, (4,)))])
"""
TRAINER = """\
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def fit(self, loader):
        for x, y in loader:
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
        return self.evaluate(loader)

    @torch.no_grad()
    def evaluate(self, loader):
        return sum(F.cross_entropy(self.model(x), y).item() for x, y in loader)
"""
MODELS = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))

    def forward(self, x):
        return self.layers(x)
"""


def test_a_trainer_class_in_another_module_is_analysed_at_its_own_lines():
    files = {"/project/trainer.py": TRAINER, "/project/models.py": MODELS}
    asked: list[str] = []
    found = analyze_project(TRAIN_SCRIPT, "/project/train.py", project_reader(files, asked), strict=True)
    where = {(f.file, f.line, f.details["code"]) for f in found}
    assert ("/project/trainer.py", 11, "TS101") in where  # the lone backward() its zero_grad() belongs above
    # the evaluate() method runs under no_grad, but self.model is a models.Net, which has dropout: eval() is needed
    assert ("/project/trainer.py", 17, "TS102") in where
    assert where <= {("/project/trainer.py", 11, "TS101"), ("/project/trainer.py", 17, "TS102")}
    # parsed from the reader only; torch and numpy are never looked up (a local os.py would shadow the stdlib's)
    assert not any(os.path.basename(p).startswith(("numpy", "torch")) for p in asked)
    assert "/project/os.py" in asked


def test_without_dropout_or_batch_norm_no_grad_alone_is_enough():
    files = {"/project/trainer.py": TRAINER, "/project/models.py": MODELS.replace("nn.Dropout(0.2), ", "")}
    found = analyze_project(TRAIN_SCRIPT, "/project/train.py", project_reader(files), strict=True)
    assert {(f.line, f.details["code"]) for f in found} == {(11, "TS101")}


def test_an_imported_evaluate_is_protected_by_its_callers_eval_and_no_grad():
    engine = (
        "def evaluate(model, loader):\n"
        "    total = 0.0\n"
        "    for x, y in loader:\n"
        "        total += model(x).sum().item()\n"
        "    return total\n"
    )
    script = (
        "import torch\n"
        "from engine import evaluate\n"
        "model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))\n"
        "val_loader = [(torch.ones(1, 2), None)]\n"
        "{setup}"
        "print(evaluate(model, val_loader))\n"
    )
    read = project_reader({"/p/engine.py": engine})
    unprotected = analyze_project(script.format(setup=""), "/p/main.py", read, strict=True)
    assert [(f.file, f.line, f.details["code"]) for f in unprotected] == [("/p/engine.py", 4, "TS102")]  # the forward
    protected = script.format(setup="model.eval()\n").replace("print(", "with torch.no_grad():\n    print(")
    assert analyze_project(protected, "/p/main.py", read, strict=True) == []


def test_project_loading_is_bounded_and_survives_cycles_and_failing_reads():
    chain = {f"/c/m{i}.py": f"import m{i + 1}\nimport m{i - 1}\nbreakpoint()\n" for i in range(1, 80)}

    def read(path: str) -> str | None:
        if path.endswith("m5.py"):
            raise PermissionError(path)  # a file the reader cannot see is left out, the others still come
        return chain.get(path)

    found = analyze_project("import torch\nimport m1\n", "/c/main.py", read, strict=True)
    files = {f.file for f in found}
    assert "/c/m1.py" in files and "/c/m4.py" in files and "/c/m5.py" not in files
    assert len(files) < 40  # at most MAX_PROJECT_FILES modules, the script included


def test_relative_imports_and_a_package_reexport():
    files = {
        "/w/pkg/__init__.py": "from .engine import train_one_epoch\n",
        "/w/pkg/engine.py": (
            "from . import util\n"
            "def train_one_epoch(model, loader, opt):\n"
            "    total = 0\n"
            "    for x in loader:\n"
            "        loss = model(x).sum()\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
            "        total += loss\n"
            "    return total\n"
        ),
        "/w/pkg/util.py": "from .engine import train_one_epoch\n",
    }
    script = "import torch\nimport pkg\nfrom pkg import train_one_epoch\n"
    found = analyze_project(script, "/w/scripts/run.py", project_reader(files), roots=["/w"], strict=True)
    assert [(f.file, f.line, f.details["code"]) for f in found] == [("/w/pkg/engine.py", 9, "TS104")]
    # without the workspace root, ``pkg`` is not next to the script: nothing to follow
    assert analyze_project(script, "/w/scripts/run.py", project_reader(files), strict=True) == []


def test_clean_project_fixture_and_the_correct_corpus_stay_silent_with_the_project_reader():
    def read(path: str) -> str | None:
        return read_file(path) if os.path.isfile(path) else None

    entry = os.path.join(REPO, "tests", "fixtures", "rules", "project_clean", "train.py")
    assert analyze_project(read(entry) or "", entry, read, strict=True) == []
    for path in CORRECT_LOOPS:
        assert analyze_project(read(path) or "", path, read, strict=True) == [], os.path.basename(path)


def test_a_step_method_in_another_module_called_per_batch_without_clearing():
    trainer = (
        "class Trainer:\n"
        "    def __init__(self, model, optimizer):\n"
        "        self.model = model\n"
        "        self.optimizer = optimizer\n"
        "\n"
        "    def train_step(self, x, y):\n"
        "        loss = (self.model(x) - y).pow(2).mean()\n"
        "        loss.backward()\n"
        "        self.optimizer.step()\n"
        "        return loss.item()\n"
    )
    script = (
        "import torch\n"
        "from trainer import Trainer\n"
        "model = torch.nn.Linear(2, 1)\n"
        "trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))\n"
        "for x, y in [(torch.ones(1, 2), torch.ones(1, 1))] * 10:\n"
        "{clear}"
        "    trainer.train_step(x, y)\n"
    )
    read = project_reader({"/t/trainer.py": trainer})
    (finding,) = analyze_project(script.format(clear=""), "/t/train.py", read, strict=True)
    # at the step method's one backward(), naming the step it feeds and the loop that calls the method
    assert (finding.file, finding.line, finding.details["code"]) == ("/t/trainer.py", 8, "TS101")
    assert finding.details["step_line"] == 9
    assert "train.py:6" in finding.message and "(line 9)" in finding.message
    cleared = script.format(clear="    trainer.optimizer.zero_grad()\n")
    assert analyze_project(cleared, "/t/train.py", read, strict=True) == []
    # called once, not from a loop: not a training loop at all
    once = script.replace("for x, y in [(torch.ones(1, 2), torch.ones(1, 1))] * 10:\n", "x = y = None\nif True:\n")
    assert analyze_project(once.format(clear=""), "/t/train.py", read, strict=True) == []


def test_eval_restored_in_the_language_model_fixture_is_clean():
    path = os.path.join(REPO, "tests", "fixtures", "rules", "ts102_eval_removed_language_model_style.py")
    restored = read(path).replace("def evaluate(data_source):\n", "def evaluate(data_source):\n    model.eval()\n")
    assert analyze(restored, path, strict=True) == []
    # an eval() before the epochs (not only in the export at the end) also counts as the caller's switch
    early = read(path).replace("for epoch in range(2):\n", "model.eval()\nfor epoch in range(2):\n")
    assert [f.details["code"] for f in analyze(early, path, strict=True)] == []


def test_eval_in_an_imported_helper_never_undone_by_the_imported_training_epoch():
    engine = (
        "def train_one_epoch(model, loader, optimizer):\n"
        "{train}"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        loss = (model(x) - y).pow(2).mean()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "\n"
        "def evaluate(model, loader):\n"
        "    model.eval()\n"
        "    return sum(float(model(x).sum()) for x, _ in loader)\n"
    )
    script = (
        "import torch\n"
        "import engine\n"
        "model = torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Dropout(0.1))\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(3):\n"
        "    engine.train_one_epoch(model, [], optimizer)\n"
        "    with torch.no_grad():\n"
        "        print(engine.evaluate(model, []))\n"
    )
    forgot = project_reader({"/e/engine.py": engine.format(train="")})
    found = analyze_project(script, "/e/main.py", forgot, strict=True)
    assert [(f.file, f.line, f.details["code"]) for f in found] == [("/e/main.py", 8, "TS103")]
    restored = project_reader({"/e/engine.py": engine.format(train="    model.train()\n")})
    assert analyze_project(script, "/e/main.py", restored, strict=True) == []


# ------------------------------------------------------------------------------ data flow across functions and files
GPT_MODEL = """\
import torch
from torch import nn
from torch.nn import functional as F


class CharGPT(nn.Module):
    def __init__(self, vocab, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.block = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Dropout(0.1))
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        h = self.block(self.embed(idx))
        logits = self.head(h)
        {tail}
"""
GPT_TRAINER = """\
from collections import defaultdict

import torch


class Trainer:
    def __init__(self, model, criterion, get_batch, lr=1e-3):
        self.model, self.criterion = model, criterion
        self.get_batch = get_batch
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.callbacks = defaultdict(list)
        self.iter_num = 0

    def add_callback(self, event, callback):
        self.callbacks[event].append(callback)

    def trigger_callbacks(self, event):
        for callback in self.callbacks.get(event, []):
            callback(self)

    def run(self, max_iters):
        model = self.model
        model.train()
        while self.iter_num < max_iters:
            x, y = self.get_batch()
            out = model(x)
            B, T, V = out.shape
            loss = self.criterion(out.view(B * T, V), y.view(-1))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.trigger_callbacks("on_batch_end")
            self.iter_num += 1
"""
GPT_SCRIPT = """\
import argparse

import torch
from torch import nn

from model import CharGPT
from trainer import Trainer


@torch.no_grad()
def estimate_loss(model, get_batch):
    model.eval()
    x, y = get_batch()
    return nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()
    get_batch = lambda: (torch.randint(0, 11, (4, 8)), torch.randint(0, 11, (4, 8)))
    model = CharGPT(11)
    trainer = Trainer(model, nn.CrossEntropyLoss(), get_batch)

    def on_batch_end(trainer):
        if trainer.iter_num % 10 == 0:
            print("val loss", estimate_loss(model, get_batch))
            {restore}

    trainer.add_callback("on_batch_end", on_batch_end)
    trainer.run(args.iters)


if __name__ == "__main__":
    main()
"""


def _gpt_findings(tail: str, restore: str) -> set[tuple[str, int, str]]:
    files = {
        "/gpt/model.py": GPT_MODEL.format(tail=tail),
        "/gpt/trainer.py": GPT_TRAINER,
    }
    found = analyze_project(GPT_SCRIPT.format(restore=restore), "/gpt/train.py", project_reader(files), strict=True)
    return {(os.path.basename(f.file), f.line, f.details["code"]) for f in found}


def test_softmax_assigned_before_return_reaches_the_loss_of_a_trainer_in_another_file_through_a_view():
    tail = "probs = F.softmax(logits, dim=-1)\n        return probs"
    found = _gpt_findings(tail, "model.train()")
    assert found == {("model.py", 16, "TS105")}  # where the probabilities are written, for every caller
    files = {"/gpt/model.py": GPT_MODEL.format(tail=tail), "/gpt/trainer.py": GPT_TRAINER}
    (finding,) = analyze_project(GPT_SCRIPT.format(restore="model.train()"), "/gpt/train.py", project_reader(files))
    assert "trainer.py:28" in finding.message  # the loss call it reaches
    assert (finding.details["loss_file"], finding.details["loss_line"]) == ("/gpt/trainer.py", 28)
    assert _gpt_findings("return logits", "model.train()") == set()
    # log_softmax into the same loss is only wasted work: information, not a warning
    found = analyze_project(
        GPT_SCRIPT.format(restore="model.train()"),
        "/gpt/train.py",
        project_reader(
            {
                "/gpt/model.py": GPT_MODEL.format(tail="return F.log_softmax(logits, dim=-1)"),
                "/gpt/trainer.py": GPT_TRAINER,
            }
        ),
        strict=True,
    )
    assert [(f.details["code"], f.severity) for f in found] == [("TS105", "info")]


def test_eval_in_a_callback_registered_with_a_trainer_in_another_file_is_never_undone():
    found = _gpt_findings("return logits", "pass")
    assert found == {("train.py", 27, "TS103")}
    assert _gpt_findings("return logits", "model.train()") == set()


def test_sigmoid_into_bce_with_logits_through_a_model_in_another_file():
    model = (
        "from torch import nn\n"
        "\n"
        "class Scorer(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(6, 1)\n"
        "\n"
        "    def forward(self, x):\n"
        "        return {out}\n"
    )
    script = (
        "import torch\n"
        "from torch import nn\n"
        "from models import Scorer\n"
        "\n"
        "def train(net, x, y, loss_fn):\n"
        "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "    for epoch in range(5):\n"
        "        opt.zero_grad()\n"
        "        pred = net(x).squeeze(-1)\n"
        "        loss = loss_fn(pred, y)\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        acc = ((torch.sigmoid(pred) > 0.5).float() == y).float().mean()\n"
        "\n"
        "train(Scorer(), torch.randn(8, 6), torch.ones(8), nn.BCEWithLogitsLoss())\n"
    )
    with_sigmoid = project_reader({"/b/models.py": model.format(out="torch.sigmoid(self.fc(x))")})
    found = analyze_project(script, "/b/train.py", with_sigmoid, strict=True)
    assert [(os.path.basename(f.file), f.line, f.details["code"]) for f in found] == [("models.py", 9, "TS113")]
    assert "train.py:10" in found[0].message
    logits = project_reader({"/b/models.py": model.format(out="self.fc(x)")})
    assert analyze_project(script, "/b/train.py", logits, strict=True) == []


def test_call_chains_are_walked_once_per_function_so_a_wide_call_graph_stays_fast():
    """Six layers of fifteen helpers, each calling every helper of the next layer, the last one calling eval(): the
    walk up the call chains is shared per function (without it, 15**5 paths)."""
    import time

    lines = ["import torch", "model = torch.nn.Linear(2, 2)", "opt = torch.optim.SGD(model.parameters(), lr=0.1)"]
    layers, width = 6, 15
    for layer in range(layers):
        for index in range(width):
            lines.append(f"def f{layer}_{index}():")
            if layer == layers - 1:
                lines.append("    model.eval()")
            else:
                lines.extend(f"    f{layer + 1}_{k}()" for k in range(width))
    lines += ["for step in range(3):", "    opt.zero_grad()", "    model(torch.ones(1, 2)).sum().backward()"]
    lines += ["    opt.step()", *(f"    f0_{k}()" for k in range(width))]
    began = time.process_time()
    found = analyze("\n".join(lines) + "\n", "wide.py", strict=True)
    assert time.process_time() - began < 2.0
    assert {f.details["code"] for f in found} == {"TS103"}


def test_softmax_reaching_the_loss_by_many_paths_is_found_once():
    """Helpers calling helpers (a diamond-shaped call graph): the probabilities reach the loss's parameter through
    every call site, each traced once, and are reported once, where softmax is applied (not once per loss); a path
    that brings logits makes the loss clean."""
    lines = ["import torch", "import torch.nn.functional as F", "model = torch.nn.Linear(2, 2)"]
    layers, width = 3, 4
    for layer in range(layers):
        for index in range(width):
            lines.append(f"def g{layer}_{index}(x, y):")
            if layer == layers - 1:
                lines.append("    return F.cross_entropy(x.view(-1, 2), y)")
            else:
                lines.extend(f"    a{k} = g{layer + 1}_{k}(x[:, :2], y)" for k in range(width))
                lines.append("    return a0")
    calls = [f"g0_{k}(F.softmax(model(torch.ones(1, 2)), 1), torch.zeros(1).long())" for k in range(width)]
    found = analyze("\n".join([*lines, *calls]) + "\n", "paths.py", strict=True)
    assert [(f.line, f.details["code"]) for f in found] == [(len(lines) + 1, "TS105")]
    assert found[0].details["loss_line"] in [n + 1 for n, line in enumerate(lines) if "cross_entropy" in line]
    calls[-1] = "g0_3(model(torch.ones(1, 2)), torch.zeros(1).long())"
    assert analyze("\n".join([*lines, *calls]) + "\n", "paths.py", strict=True) == []


MICRO_BATCHES = """import torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [torch.randn(8, 2) for _ in range(5)]
for batch in data:
    for micro in batch.chunk(4):
        model(micro).sum().backward()
    opt.step()


def step_fn(batch):
    for micro in batch.chunk(4):
        model(micro).sum().backward()
    opt.step()


for batch in data:
    step_fn(batch)
"""


def test_gradients_never_cleared_go_to_the_step_when_one_written_backward_runs_several_times_per_step():
    """One backward() per step is where the zero_grad() belongs; a backward() in a micro-batch loop runs several times
    per step (as a run counts them), so the finding stays at the step, in a loop and in a step function alike."""
    found = analyze(MICRO_BATCHES, "/t/train.py")
    assert {(f.line, f.details["code"]) for f in found} == {(8, "TS101"), (14, "TS101")}
    assert all("step_line" not in f.details for f in found)
