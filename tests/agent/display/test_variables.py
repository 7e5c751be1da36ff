"""What a real debugpy session shows with TensorSight injected: value lines, curated children, every evaluate context.

One session on tests/programs/tensors.py checks the Variables view, the children of a tensor, an ndarray (ours,
not pydevd's own numpy resolver), a module, an optimizer and a data loader, hover/watch/repl/clipboard text, the
``tensorsight.summarize`` builtin, and finally that the program saw no change to its state.
"""

import re

import pytest
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, IterableDataset, Subset, TensorDataset

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.agent.display.children import children
from tensorsight.agent.display.presentation import summarize

LINES = {
    "weights": "f32[64, 16] cpu μ=0.5 σ=0.289 [0, 0.999] grad norm=64",
    "scaled": "f32[64, 16] cpu μ=1.5 σ=0.866 [0, 3] grad_fn=MulBackward0",
    "bad": "f32[] cpu ⚠ NaN nan",
    "mixed": "f32[16] cpu ⚠ NaN×4 +Inf×4 -Inf×4 μ=1 σ=0 [1, 1]",
    "small": "f32[3] cpu [0.5, -1, 2] μ=0.5 σ=1.5",
    "zeros": "f32[8, 4] cpu ⚠ all zero",
    "mask": "bool[10] cpu [True, False, False, True, False, False, True, False, False, True]",
    "counts": "i64[100] cpu μ=49.5 σ=29 [0, 99]",
    "array": "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11]",
    "optimizer": "Adam lr=0.001 betas=(0.9, 0.999) wd=0 step 1 (4 tensors)",
    "loader": "DataLoader batch_size=16 shuffle num_workers=0 ⚠ loads in main process 100 samples 7 batches",
    "dataset": "TensorDataset 100 samples of f32[4], i64[]",
}
MODEL_LINE = re.compile(
    r"^Sequential cpu f32 train \(1 submodule eval\) 49 params \(all trainable\) grad norm=\d+(\.\d+)?$"
)


@pytest.fixture(scope="module")
def paused():
    """One session for the whole file: (session, frame id, locals), resumed and checked at teardown."""
    path = program("tensors.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, None)]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        yield session, frame_id, session.locals(frame_id)
        session.continue_(stop["threadId"])
        session.wait_for_exit()
        output = session.stdout()
    assert "STATE OK" in output, output
    assert "[tensorsight]" not in output, output


def test_value_lines_in_the_variables_view(paused):
    _, _, variables = paused
    for name, line in LINES.items():
        assert variables[name]["value"] == line, name
    assert MODEL_LINE.match(variables["model"]["value"]), variables["model"]["value"]
    assert all(variables[name]["variablesReference"] > 0 for name in (*LINES, "model"))


def test_a_dataset_expands_to_its_own_attributes(paused):
    """A dataset's line is ours, its children pydevd's: the attributes a user expands it for."""
    session, _, variables = paused
    assert "tensors" in session.children(variables["dataset"])


def test_tensor_children_are_curated_and_lazy(paused):
    session, _, variables = paused
    children = session.children(variables["weights"])
    assert list(children) == [
        "shape",
        "dtype",
        "device",
        "stats",
        "memory",
        "requires_grad",
        "grad",
        "grad_fn",
        "is_leaf",
        "values",
        "raw attributes",
    ]
    assert children["shape"]["value"] == "torch.Size([64, 16])"
    assert children["shape"]["evaluateName"] == "weights.shape"
    assert children["grad"]["value"] == "f32[64, 16] cpu all 2"
    assert children["grad"]["evaluateName"] == "weights.grad"
    assert children["memory"]["value"] == "4.0 KiB, contiguous"
    assert children["stats"]["value"] == "min=0 max=0.999 mean=0.5 std=0.289"

    stats = {name: v["value"] for name, v in session.children(children["stats"]).items()}
    assert stats["min"] == "0.0" and stats["max"] == "0.9990234375" and stats["mean"] == "0.49951171875"
    assert (stats["nan"], stats["+inf"], stats["-inf"], stats["zeros"], stats["exact"]) == ("0", "0", "0", "1", "True")

    rows = session.children(children["values"])
    assert list(rows) == [f"[{i}]" for i in range(8)] + ["[63]"]
    assert rows["[0]"]["evaluateName"] == "weights[0]"
    assert rows["[63]"]["value"].startswith("f32[16] cpu μ=0.992 σ=0.00465 [0.984, 0.999]")

    raw = session.children(children["raw attributes"])
    for copying in ("T", "mT", "H", "mH"):
        assert raw[copying]["value"].startswith("not evaluated"), raw[copying]
        assert raw[copying]["variablesReference"] == 0
    assert raw["T"]["evaluateName"] == "weights.T"
    assert raw["_version"]["value"] == "0" and raw["is_leaf"]["value"] == "True"
    assert not [name for name in raw if name.startswith("__") or name in ("add_", "sum")]

    nonleaf = session.children(variables["scaled"])
    assert nonleaf["grad"]["value"].startswith("not kept for a non-leaf tensor")
    assert nonleaf["grad_fn"]["value"].startswith("<MulBackward0")


def test_ndarray_children_are_ours(paused):
    session, _, variables = paused
    children = session.children(variables["array"])
    assert list(children) == ["shape", "dtype", "stats", "memory", "values", "raw attributes"]
    assert children["stats"]["value"] == "min=0 max=11 mean=5.5 std=3.61"
    rows = session.children(children["values"])
    assert rows["[2]"]["value"] == "f64[4] ndarray [8, 9, 10, 11] μ=9.5 σ=1.29"
    assert rows["[2]"]["evaluateName"] == "array[2]"


def test_module_optimizer_loader_children(paused):
    session, _, variables = paused
    model = session.children(variables["model"])
    assert model["(params)"]["value"] == "49" and model["(trainable)"]["value"] == "49"
    assert model["(mode)"]["value"] == "train" and model["(devices)"]["value"] == "cpu"
    assert re.match(r"^Linear cpu f32 train 40 params \(all trainable\) grad norm=", model["0"]["value"])
    assert model["0"]["evaluateName"] == "model[0]"
    assert re.match(r"^Linear cpu f32 eval 9 params", model["2"]["value"])
    layer = session.children(model["0"])
    assert re.match(r"^f32\[8, 4\] cpu μ=.* grad norm=", layer["weight"]["value"])
    assert layer["weight"]["evaluateName"] == "model[0].weight"

    optimizer = session.children(variables["optimizer"])
    assert optimizer["(step)"]["value"] == "1" and optimizer["(lr)"]["value"] == "0.001"
    assert optimizer["param_groups"]["evaluateName"] == "optimizer.param_groups"

    loader = session.children(variables["loader"])
    assert loader["num_workers"]["value"] == "0 (batches load in the main process: a likely bottleneck)"
    assert loader["shuffle"]["value"] == "True"
    assert (loader["(samples)"]["value"], loader["(batches)"]["value"]) == ("100", "7")


def test_every_evaluate_context(paused):
    session, frame_id, _ = paused
    for name, line in LINES.items():
        for context in ("hover", "watch", "repl"):
            assert session.evaluate(name, frame_id, context)["result"] == line, (name, context)
    clipboard = session.evaluate("small", frame_id, "clipboard")["result"]
    assert clipboard == LINES["small"] + "\ntensor([ 0.5000, -1.0000,  2.0000])"
    assert (
        session.evaluate("weights[0, :2]", frame_id, "hover")["result"]
        == "f32[2] cpu [0, 0.0009766] μ=0.000488 σ=0.000691 grad_fn=SliceBackward0"
    )
    assert MODEL_LINE.match(session.evaluate("model", frame_id, "watch")["result"])
    summary = session.evaluate("tensorsight.summarize(counts)", frame_id, "repl")["result"]
    assert summary == repr(LINES["counts"])


def test_module_optimizer_loader_edge_cases_in_process():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    with torch.no_grad():
        model[1].weight[0, 0] = float("nan")
    model(torch.ones(3, 2)).sum().backward()
    line = summarize(model)
    assert line.startswith("Sequential cpu f32 ⚠ NaN/Inf in weights: 1.weight ⚠ NaN/Inf in grads: 0.weight (+")
    assert line.endswith(" train 9 params (all trainable)") and "grad norm" not in line
    model[0].requires_grad_(False)
    frozen = summarize(model.eval())
    assert (
        frozen.startswith("Sequential cpu f32 ⚠ NaN/Inf in weights: 1.weight")
        and "eval 9 params (3 trainable)" in frozen
    )

    plain_sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    assert summarize(plain_sgd) == "SGD lr=0.1 momentum=0 wd=0 step ? (4 tensors)"
    adam = torch.optim.Adam([{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.01}])
    assert summarize(adam) == "Adam 2 groups lr=[0.001, 0.01] betas=(0.9, 0.999) wd=0 step 0 (4 tensors)"

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert summarize(DataLoader(Stream(), batch_size=2, num_workers=0)).startswith(
        "DataLoader batch_size=2 sampler=_InfiniteConstantSampler num_workers=0 ⚠ loads in main process"
    )
    workers = DataLoader(TensorDataset(torch.zeros(10, 1)), batch_size=4, num_workers=2, drop_last=True)
    assert summarize(workers) == "DataLoader batch_size=4 no shuffle num_workers=2 drop_last 10 samples 2 batches"


def test_dataset_lines_never_index_the_dataset():
    """A Dataset's line says its class, length and what it holds, without running its ``__getitem__`` (user code)."""

    class Images(Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, index):
            raise AssertionError("the summary ran the dataset's __getitem__")

    class NoLength(Dataset):
        def __getitem__(self, index):
            raise AssertionError("the summary ran the dataset's __getitem__")

    images = Images()
    assert summarize(images) == "Images 7 samples"
    assert summarize(NoLength()) == "NoLength"
    pairs = TensorDataset(torch.zeros(60, 1, 28, 28), torch.zeros(60, dtype=torch.long))
    assert summarize(pairs) == "TensorDataset 60 samples of f32[1, 28, 28], i64[]"
    assert summarize(Subset(pairs, range(10))) == "Subset 10 of TensorDataset (60)"
    assert summarize(ConcatDataset([images, images])) == "ConcatDataset 14 samples"


def test_grad_norm_row_says_no_grads_yet_before_backward_and_inf_for_nan_grads():
    """Before backward the row must not read as NaN gradients; after a NaN backward it must not read as a norm."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    assert children(model)["(grad norm)"] == "no grads yet"
    model(torch.ones(3, 2)).sum().backward()
    shown = children(model)["(grad norm)"]
    assert isinstance(shown, float) and shown > 0
    with torch.no_grad():
        model[0].weight.grad[0, 0] = float("nan")
    assert children(model)["(grad norm)"] == "inf (NaN/Inf in 1 grad)"
    frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    assert children(frozen)["(grad norm)"] == "no trainable params"
