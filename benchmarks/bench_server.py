"""Language-server speed targets, one run each, printed as ratios to the target (below 1.00 meets it).

1. Diagnostics on a 3000-line training file: the rules in-process (``analyze``), and through the real server
   (``didOpen`` to ``publishDiagnostics``, the file arriving over stdio): target <= 200 ms.
2. Server start (spawning ``python -m tensorsight.server``) to the first diagnostics of an opened file: target
   <= 1.5 s.

    .venv/bin/python benchmarks/bench_server.py
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
PYHELPERS = REPO / "pyhelpers"
sys.path.insert(0, str(PYHELPERS))

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from tensorsight.core.rules import analyze  # noqa: E402

DIAGNOSTICS_TARGET_S = 0.200
START_TARGET_S = 1.5
LINES = 3000

# One block of ordinary training code (a model, a train step, a validation pass, logging, one silent bug per block so
# the rules have work to do); repeated with fresh names up to LINES lines.
BLOCK = '''

class Net{i}(nn.Module):
    """Block {i}: a small classifier."""

    def __init__(self, width=64):
        super().__init__()
        self.fc1 = nn.Linear(32, width)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(self.drop(h))


def evaluate{i}(model, loader):
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for inputs, labels in loader:
            logits = model(inputs.to(device))
            correct += (logits.argmax(1) == labels.to(device)).sum().item()
            total += labels.numel()
    model.train()
    return correct / max(total, 1)


def train{i}(epochs, train_loader, val_loader):
    model = Net{i}().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
    history = []
    for epoch in range(epochs):
        running = 0.0
        for step, (inputs, labels) in enumerate(train_loader):
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            running += loss.item()
            history.append(loss)
        scheduler.step()
        accuracy = evaluate{i}(model, val_loader)
        print(f"block {i} epoch {{epoch}}: loss {{running:.3f}} accuracy {{accuracy:.2f}}")
    return model
'''

HEADER = '''"""A long training module for the language-server benchmark."""

import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''


def training_file(lines: int = LINES) -> str:
    parts = [HEADER]
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(BLOCK.format(i=index))
        index += 1
    text = "".join(parts)
    return "\n".join(text.split("\n")[:lines]).rsplit("\n\n\nclass ", 1)[0] + "\n"


def ratio_line(label: str, seconds: float, target: float) -> str:
    return f"{label:<58} {seconds * 1000:8.1f} ms   target {target * 1000:6.0f} ms   ratio {seconds / target:5.2f}"


async def through_the_server(path: pathlib.Path, text: str) -> tuple[float, float, int]:
    """(start -> first diagnostics, didOpen -> diagnostics of the big file, number of diagnostics)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = str(PYHELPERS)
    client = LanguageClient("bench", "1")
    published: dict[str, asyncio.Event] = {}
    counts: dict[str, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        counts[params.uri] = len(params.diagnostics)
        published.setdefault(params.uri, asyncio.Event()).set()

    small = REPO / "tests" / "fixtures" / "rules" / "ts101_gradients_never_cleared.py"
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "tensorsight.server", env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=os.getpid()))
    client.initialized(types.InitializedParams())
    first = await _open(client, published, small, small.read_text())
    start_to_first = first - started
    opened = time.perf_counter()
    done = await _open(client, published, path, text)
    big = done - opened
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return start_to_first, big, counts[path.as_uri()]


async def _open(client: LanguageClient, published: dict[str, asyncio.Event], path: pathlib.Path, text: str) -> float:
    uri = path.as_uri()
    event = published.setdefault(uri, asyncio.Event())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await asyncio.wait_for(event.wait(), 60)
    return time.perf_counter()


def main() -> None:
    text = training_file()
    path = REPO / "benchmarks" / "bench_server_training_file.py"  # never written: the server gets the text itself
    started = time.perf_counter()
    findings = analyze(text, str(path))
    in_process = time.perf_counter() - started
    start_to_first, through_server, published = asyncio.run(through_the_server(path, text))
    print(f"TensorSight language server: {text.count(chr(10))}-line training file, {len(findings)} findings")
    print(ratio_line("diagnostics, rules in-process (analyze)", in_process, DIAGNOSTICS_TARGET_S))
    print(ratio_line(f"diagnostics through the server (didOpen -> {published} published)", through_server, DIAGNOSTICS_TARGET_S))
    print(ratio_line("server start -> first diagnostics", start_to_first, START_TARGET_S))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(one run each; load average {load:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
