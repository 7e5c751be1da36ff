"""Debuggee for tests/agent/display/test_good_guest.py: every bad input (bad_values.py) in one frame, under a real
debugger.

Each value gets a truthful summary in the debugger and must come out unchanged: after the pause the program
checks values, ``_version``, the autograd graph, both RNG states, and that no user ``__torch_function__`` ran.
"""

import warnings

import numpy as np
import torch
from bad_values import bad_values, calls


class Bookkeeping:
    """The program's own snapshot. A plain object, so the debugger does not print the tensors it holds (stock
    debugpy shows a dict of tensors through each tensor's repr, which would run Tagged.__torch_function__)."""


torch.manual_seed(0)
np.random.seed(0)
kept = Bookkeeping()
kept.values = bad_values()
globals().update(kept.values)  # each value is a variable of this frame, as in a user's script

with torch._C.DisableTorchFunctionSubclass():  # taking the snapshot must not count as a __torch_function__ call
    kept.checked = {
        name: value
        for name, value in kept.values.items()
        if isinstance(value, torch.Tensor) and name not in ("exploding", "nested", "meta")
    }
    kept.checked["huge"] = kept.values["huge"][:2]  # the memory of the 1e12-element view, not materialised
    kept.versions = {name: t._version for name, t in kept.checked.items() if t.layout == torch.strided}
    kept.copies = {name: t.detach().clone() for name, t in kept.checked.items()}
kept.memmap_copy = np.array(kept.values["memmapped"])
kept.grad_fn = kept.values["nonleaf"].grad_fn
kept.rng_torch = torch.get_rng_state()
kept.rng_numpy = np.random.get_state()[1].copy()
kept.torch_function_calls = calls["torch_function"]
warnings.simplefilter("always")  # any warning the debugger triggers from here on reaches the output

print("paused")  # @bp

warnings.filterwarnings("ignore")
torch_function_calls_after = calls["torch_function"]
changed = []
with torch._C.DisableTorchFunctionSubclass():
    for name, t in kept.checked.items():
        if name in kept.versions and t._version != kept.versions[name]:
            changed.append(f"{name} version")
        now, before = t.detach(), kept.copies[name]
        if now.layout != torch.strided:
            now, before = now.to_dense(), before.to_dense()
        if now.is_quantized:
            now, before = now.int_repr(), before.int_repr()
        try:
            torch.testing.assert_close(now, before, rtol=0, atol=0, equal_nan=True)
        except AssertionError:
            changed.append(name)
if not np.array_equal(kept.values["memmapped"], kept.memmap_copy):
    changed.append("memmapped")
if kept.values["nonleaf"].grad_fn is not kept.grad_fn or kept.values["leaf"].grad is not None:
    changed.append("autograd graph")
if not torch.equal(torch.get_rng_state(), kept.rng_torch):
    changed.append("torch RNG")
if not np.array_equal(np.random.get_state()[1], kept.rng_numpy):
    changed.append("numpy RNG")
if torch_function_calls_after != kept.torch_function_calls:
    changed.append(f"__torch_function__ ran {torch_function_calls_after - kept.torch_function_calls} times")
print("STATE " + ("OK" if not changed else "CHANGED: " + ", ".join(changed)))
