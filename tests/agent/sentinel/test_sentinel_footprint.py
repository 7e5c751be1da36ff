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
