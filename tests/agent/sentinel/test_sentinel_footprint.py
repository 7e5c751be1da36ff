"""Where the NaN sentinel is on the torch call path, in a fresh interpreter armed as in a debug session: nowhere
before the program's first module call, only between module calls and optimizer steps after it, never inside a
module's forward; and a tensor subclass's ``__torch_function__`` runs as often as without it."""

import json
import os
import subprocess

from support.paths import PYHELPERS, PYTHON

SCRIPT = r"""
import json, sys, torch
from torch import nn
from torch.overrides import _get_current_function_mode_stack
from tensorsight.agent import sentinel

def ours():
    stack = _get_current_function_mode_stack()
    return [type(m).__name__ for m in stack if type(m).__module__.startswith("tensorsight")]

class Counted(torch.Tensor):
    calls = 0
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})

seen = {}
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
    def forward(self, x):
        seen["inside"] = ours()
        return self.fc(x)

if sys.argv[1] == "armed":
    sentinel.break_on_nonfinite(True)
x = torch.ones(3) * 2
seen["before"] = ours()
model = Probe()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    out = model(x)
    seen["after"] = ours()
    loss = (out * torch.ones(3).as_subclass(Counted)).sum()
    loss.backward()
    optimizer.step()
seen["calls"] = Counted.calls
print(json.dumps(seen))
"""


def run(mode):
    completed = subprocess.run(
        [PYTHON, "-c", SCRIPT, mode],
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(completed.stdout.splitlines()[-1])


def test_the_sentinel_mode_is_on_the_stack_only_between_module_calls():
    armed, plain = run("armed"), run("plain")
    assert armed["before"] == [] and armed["inside"] == []
    assert armed["after"] == ["_OutsideModulesMode"]
    assert plain["after"] == [] and armed["calls"] == plain["calls"] > 0


WORKERS_SCRIPT = r"""
import json, sys, torch
from torch.overrides import _get_current_function_mode_stack
from torch.utils.data import DataLoader, Dataset

class Counted(torch.Tensor):
    calls = 0
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})

class Rows(Dataset):
    # each sample says which torch-function modes its worker has and how often a subclass dispatched in it
    def __len__(self):
        return 64
    def __getitem__(self, index):
        before = Counted.calls
        value = (torch.full((3,), index / 64).as_subclass(Counted) * 2).sum().as_subclass(torch.Tensor)
        modes = len(_get_current_function_mode_stack())
        return value, torch.tensor([modes, Counted.calls - before])

def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Rows(), batch_size=16, num_workers=2)
    facts, outputs = set(), []
    for epoch in range(2):  # the second epoch forks its workers after the first steps
        for values, seen in loader:
            optimizer.zero_grad()
            loss = model(values[:, None]).pow(2).mean()
            loss.backward()
            optimizer.step()
            facts.update(tuple(row) for row in seen.tolist())
            outputs.append(round(loss.item(), 6))
    print(json.dumps({"facts": sorted(facts), "losses": outputs}))

main()
"""


def test_dataloader_workers_run_without_our_modes_and_compute_the_same():
    """Workers forked while our modes were on the training thread's stack (the first steps' shape window, the
    sentinel's outside-modules mode) drop them at once: each op of ``__getitem__`` dispatches as in plain Python
    (no mode, a subclass's ``__torch_function__`` as often), and the run's losses are the plain run's."""
    program = os.path.join(os.path.dirname(__file__), "_workers_footprint.py")
    with open(program, "w") as handle:
        handle.write(WORKERS_SCRIPT)
    try:
        doctored = subprocess.run(
            [PYTHON, "-m", "tensorsight", "doctor", program],
            env={**os.environ, "PYTHONPATH": PYHELPERS},
            capture_output=True,
            text=True,
            timeout=180,
        )
        plain = subprocess.run([PYTHON, program], capture_output=True, text=True, timeout=180, check=True)
    finally:
        os.remove(program)
    doctored_run = json.loads(next(line for line in doctored.stdout.splitlines() if line.startswith("{")))
    plain_run = json.loads(plain.stdout.splitlines()[-1])
    assert doctored_run == plain_run, doctored.stderr
    assert plain_run["facts"] == [[0, 2]]  # no mode in the worker; the subclass dispatches its two ops per sample
