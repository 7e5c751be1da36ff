"""Language-server speed targets, one run each, printed as ratios to the target (below 1.00 meets it).

1. Diagnostics on a 3000-line training file: the rules in-process (``analyze``), and through the real server
   (``didOpen`` to ``publishDiagnostics``, the file arriving over stdio): target <= 200 ms.
2. Server start (spawned exactly as the extension spawns it: the isolated ``python -I`` bootstrap of
   ``extension/src/common/pythonLaunch.ts``) to the first diagnostics of an opened file: target <= 1.5 s.
3. A very large file: the slowest hover / ``suggestConditions`` answer while a 60,000-line file is opened and edited
   (six keystrokes): target <= 300 ms; and the server's resident memory (with its analysis child) after six
   open/edit/close cycles of it, against where it started: target <= 64 MiB more.

Wall-clock time is what a user waits; on a shared, loaded machine it also counts time spent waiting for a CPU, so
the CPU time actually used (of this process for ``analyze``, of the server process from /proc for the server rows,
where available) is printed beside it against the same target.

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
sys.path.insert(0, str(REPO / "tests"))  # support.extension_launch: the extension's own launch function

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from support.extension_launch import extension_launch  # noqa: E402
from tensorsight.core.rules import analyze  # noqa: E402

DIAGNOSTICS_TARGET_S = 0.200
START_TARGET_S = 1.5
ANSWER_TARGET_S = 0.300
MEMORY_TARGET_MIB = 64
LINES = 3000
LARGE_LINES = 60_000

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


def ratio_line(label: str, seconds: float, target: float, cpu: float | None = None) -> str:
    line = f"{label:<50} wall {seconds * 1000:7.1f} ms  ratio {seconds / target:5.2f}"
    if cpu is not None:
        line += f"   cpu {cpu * 1000:7.1f} ms  ratio {cpu / target:5.2f}"
    return line + f"   (target {target * 1000:.0f} ms)"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` (Linux /proc), or None elsewhere."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


async def through_the_server(path: pathlib.Path, text: str) -> dict[str, float | None]:
    """Start -> first diagnostics and didOpen -> diagnostics of the big file, wall and server CPU seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_") and k != "PYTHONPATH"}
    launch = extension_launch("server", env)
    client = LanguageClient("bench", "1")
    published: dict[str, asyncio.Event] = {}
    counts: dict[str, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        counts[params.uri] = len(params.diagnostics)
        published.setdefault(params.uri, asyncio.Event()).set()

    small = REPO / "tests" / "fixtures" / "rules" / "ts101_gradients_never_cleared.py"
    started = time.perf_counter()
    await client.start_io(launch["command"], *launch["args"], env=launch["env"], cwd=launch["cwd"])
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=os.getpid())
    )
    client.initialized(types.InitializedParams())
    first = await _open(client, published, small, small.read_text())
    pid = client._server.pid if client._server is not None else 0
    start_cpu = cpu_seconds(pid)
    start_to_first = first - started
    opened = time.perf_counter()
    done = await _open(client, published, path, text)
    big = done - opened
    big_cpu = cpu_seconds(pid)
    slowest, growth = await with_a_large_file(client, pid, small)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "start": start_to_first,
        "start_cpu": start_cpu,
        "big": big,
        "big_cpu": None if big_cpu is None or start_cpu is None else big_cpu - start_cpu,
        "published": counts[path.as_uri()],
        "slowest": slowest,
        "growth": growth,
    }


def resident_mib(pid: int) -> float | None:
    """Resident MiB of ``pid`` and its children (the analysis child), Linux /proc; None elsewhere."""
    try:
        children = pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0
        for each in [pid, *map(int, children)]:
            status = pathlib.Path(f"/proc/{each}/status").read_text()
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return total / 1024
    except (OSError, ValueError, StopIteration):
        return None


async def with_a_large_file(client: LanguageClient, pid: int, small: pathlib.Path) -> tuple[float, float | None]:
    """Slowest hover/suggestConditions answer while a LARGE_LINES file is opened and edited, and the memory kept
    after six open/edit/close cycles of it (MiB, or None)."""
    text = training_file(LARGE_LINES)
    hover = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=small.as_uri()), position=types.Position(line=3, character=1)
    )
    slowest = 0.0
    before = resident_mib(pid)
    for cycle in range(6):
        uri = (REPO / "benchmarks" / f"bench_server_large_{cycle}.py").as_uri()  # never written either
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        for version in range(2, 8):
            at = types.Position(line=10 * version, character=0)
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="# x\n")
                    ],
                )
            )
            for _ in range(3):
                began = time.perf_counter()
                await client.text_document_hover_async(hover)
                await client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"})
                slowest = max(slowest, (time.perf_counter() - began) / 2)
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the debounced analysis of the last edit
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    await asyncio.sleep(1.0)
    after = resident_mib(pid)
    return slowest, None if before is None or after is None else after - before


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
    started, started_cpu = time.perf_counter(), time.process_time()
    findings = analyze(text, str(path))
    in_process, in_process_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    server = asyncio.run(through_the_server(path, text))
    print(f"TensorSight language server: {text.count(chr(10))}-line training file, {len(findings)} findings")
    print(ratio_line("diagnostics, rules in-process (analyze)", in_process, DIAGNOSTICS_TARGET_S, in_process_cpu))
    label = f"diagnostics through the server ({server['published']:.0f} published)"
    print(ratio_line(label, float(server["big"] or 0.0), DIAGNOSTICS_TARGET_S, server["big_cpu"]))
    start = float(server["start"] or 0.0)
    print(ratio_line("server start -> first diagnostics", start, START_TARGET_S, server["start_cpu"]))
    label = f"slowest answer, {LARGE_LINES}-line file opened and edited"
    print(ratio_line(label, float(server["slowest"] or 0.0), ANSWER_TARGET_S))
    growth = server["growth"]
    if growth is not None:
        print(
            f"{'memory kept after 6 open/edit/close cycles of it':<50} {growth:7.1f} MiB   ratio "
            f"{max(growth, 0.0) / MEMORY_TARGET_MIB:5.2f}   (target {MEMORY_TARGET_MIB} MiB)"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(one run each; load average {load:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
