"""Debuggee for tests/agent/display/test_request_budget.py: frames whose Variables view would take seconds unbudgeted.

Three frames, paused one after the other: one holding a 1e8-element float32 tensor with one NaN, one holding a
module with 10,000 parameter tensors (with grads), one holding a dict of 1000 tensors. After each pause the program
checks that what it holds is unchanged (values through a fingerprint, ``_version``, both RNG states) and prints it.
Sizes come from argv (elements of the big tensor, parameter tensors, dict entries) so a benchmark can reuse it.
"""

import sys

import torch

big_elements = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
parameter_count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
dict_entries = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
generator = torch.Generator().manual_seed(0)


def fingerprint(tensors):
    """What the program can observe of its tensors, cheaply: versions, NaN positions and NaN-free sums."""
    return [(t._version, torch.isnan(t).nonzero().flatten().tolist(), torch.nansum(t).item()) for t in tensors]


def check(name, tensors, before, rng):
    same = fingerprint(tensors) == before and torch.equal(torch.get_rng_state(), rng)
    print(f"STATE {name} " + ("OK" if same else "CHANGED"))


def big_tensor_frame():
    big = torch.randn(big_elements, generator=generator)
    big[big_elements // 3] = float("nan")
    before, rng = fingerprint([big]), torch.get_rng_state()
    print("paused big")  # @bp big
    check("big", [big], before, rng)


def many_parameters_frame():
    model = torch.nn.ParameterList(
        torch.nn.Parameter(torch.randn(64, generator=generator)) for _ in range(parameter_count)
    )
    for p in model:
        p.grad = torch.randn(64, generator=generator)
    tensors = [*model, *(p.grad for p in model)]
    before, rng = fingerprint(tensors), torch.get_rng_state()
    print("paused model")  # @bp model
    check("model", tensors, before, rng)


def dict_frame():
    tensors = {f"t{i:04d}": torch.randn(20_000, generator=generator) for i in range(dict_entries)}
    tensors[f"t{dict_entries // 2:04d}"][7] = float("inf")  # t0500 of 1000: one alarm among quiet lines
    before, rng = fingerprint(list(tensors.values())), torch.get_rng_state()
    print("paused dict")  # @bp dict
    check("dict", list(tensors.values()), before, rng)


for _ in range(rounds):
    big_tensor_frame()
    many_parameters_frame()
    dict_frame()
