"""What an op is to the sentinel (agent/sentinel/ops.py): its checking policy, the name a user reads, and whether
the NaN/Inf in its output was born there or carried in from an input (tensor, Python number or numpy array)."""

import numpy as np
import torch
import torch.nn.functional as F

from tensorsight.agent.sentinel.ops import (
    BACKWARD,
    BACKWARD_FUNCS,
    CHECK,
    INPLACE,
    SKIP,
    born,
    inherited,
    judge_inputs,
    op_name,
    policies,
    policy_of,
)
from tensorsight.core.nonfinite import NonFiniteCounts

NAN, INF, NEGINF, CLEAN = (
    NonFiniteCounts(nan=1),
    NonFiniteCounts(posinf=1),
    NonFiniteCounts(neginf=1),
    NonFiniteCounts(),
)


def test_policies():
    assert policy_of(torch.Tensor.size) == SKIP  # metadata
    assert policy_of(torch.relu) == SKIP  # finite from finite, both ways
    assert policy_of(torch.Tensor.add_) == INPLACE and policy_of(torch.Tensor.__iadd__) == INPLACE
    assert policy_of(torch.Tensor.__setitem__) == INPLACE
    assert policy_of(torch.log) == CHECK and policy_of(torch.Tensor.__truediv__) == CHECK
    assert policy_of(torch.Tensor.__init_subclass__) == CHECK  # a dunder-prefixed name is not in-place


def test_backward_functions_are_recognised():
    def backward_like(*args):
        return None

    BACKWARD_FUNCS.add(backward_like)
    try:
        assert policy_of(backward_like) == BACKWARD
    finally:
        BACKWARD_FUNCS.discard(backward_like)
        policies.pop(backward_like, None)


def test_op_names_as_a_user_writes_them():
    assert op_name(torch.log) == "torch.log"
    assert op_name(F.linear) == "F.linear"
    assert op_name(torch.Tensor.add_) == "Tensor.add_"
    assert op_name(torch.Tensor.__truediv__) == "/" and op_name(torch.Tensor.__rpow__) == "**"
    assert op_name(torch.Tensor.__matmul__) == "@" and op_name(torch.Tensor.__setitem__) == "[...] ="


def test_born_nan_needs_no_nan_in_and_born_inf_needs_all_finite_in():
    assert born(NAN, CLEAN) and born(NAN, INF)  # inf - inf makes a new NaN
    assert not born(NAN, NAN)
    assert born(INF, CLEAN) and not born(INF, NEGINF) and not born(NEGINF, NAN)
    assert not born(CLEAN, CLEAN)


def test_inherited():
    assert inherited(NAN, NAN) and not inherited(NAN, INF)
    assert inherited(INF, NEGINF) and not inherited(INF, CLEAN)


def test_judging_tensor_and_number_inputs():
    zeros = torch.zeros(3)
    assert judge_inputs((zeros,), {}, NEGINF, skip_first=False) == ("forward", "", CLEAN)  # log(0)
    with_inf = torch.tensor([1.0, float("-inf")])
    assert judge_inputs((with_inf,), {}, NEGINF, skip_first=False) is None  # carried along
    assert judge_inputs((zeros, float("nan")), {}, NAN, skip_first=False) is None  # a NaN written in code
    assert judge_inputs((zeros,), {"other": [float("inf")]}, INF, skip_first=False) is None
    # an in-place op: its first argument is the output, not an input
    assert judge_inputs((with_inf, zeros), {}, NEGINF, skip_first=True) == ("forward", "", CLEAN)
    # NaN made from an Inf the inputs held (inf - inf): born here, and the Inf it came from is named
    assert judge_inputs((with_inf,), {}, NAN, skip_first=False) == ("forward", "", NEGINF)


def test_judging_outside_data():
    data = np.array([1.0, np.nan])
    assert judge_inputs((data,), {}, NAN, skip_first=False) == ("data", "a numpy array [2] float64", CLEAN)
    assert judge_inputs((np.float32("nan"),), {}, NAN, skip_first=False) is None  # a numpy scalar is a number
