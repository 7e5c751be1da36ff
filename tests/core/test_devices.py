"""core.devices: where a model lives, inputs elsewhere, torch's device errors, data moved at every step."""

import pytest

from tensorsight.core.devices import (
    TransferLog,
    device_issues,
    model_device,
    normalize_device,
    parse_device_error,
    repeated_transfer_message,
)

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)


def test_normalize_device():
    assert normalize_device("cuda") == "cuda:0"
    assert normalize_device("cuda", current_index=1) == "cuda:1"
    assert normalize_device("cpu") == "cpu"
    assert normalize_device("cuda:2") == "cuda:2"


def test_model_device_is_the_majority_and_prefers_the_accelerator_on_ties():
    assert model_device({"a": "cuda:0", "b": "cuda:0", "c": "cpu"}) == "cuda:0"
    assert model_device({"a": "cuda:0", "b": "cpu"}) == "cuda:0"
    assert model_device({}) is None


def test_everything_on_one_device_has_no_issue():
    assert device_issues({"w": "cpu", "b": "cpu"}, [("x", "cpu"), ("y", "cpu")]) == []


def test_input_on_another_device_is_an_error_naming_both_devices():
    issues = device_issues({"w": "cuda:0", "b": "cuda:0"}, [("xb", "cpu"), ("yb", "cuda:0")], model_name="net")
    assert len(issues) == 1
    issue = issues[0]
    assert (issue.subject, issue.device, issue.expected, issue.severity) == ("xb", "cpu", "cuda:0", "error")
    assert "xb is on cpu but net is on cuda:0" in issue.message


def test_split_and_meta_parameters_are_reported():
    issues = device_issues({"fc.weight": "cuda:0", "fc.bias": "cuda:0", "head.weight": "cpu"})
    assert [i.severity for i in issues] == ["warning"]
    assert "2 on cuda:0" in issues[0].message and "1 on cpu (head.weight)" in issues[0].message
    meta = device_issues({"w": "meta"})
    assert meta[0].severity == "error" and "meta" in meta[0].message


def test_model_without_parameters_takes_the_first_inputs_device():
    issues = device_issues({}, [("a", "cpu"), ("b", "meta")])
    assert [(i.subject, i.expected) for i in issues] == [("b", "cpu")]


def test_parse_device_error_messages():
    cuda = parse_device_error(
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
        "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)"
    )
    assert cuda is not None and cuda.devices == ("cuda:0", "cpu") and cuda.argument == "mat1"
    meta = parse_device_error("Tensor on device meta is not on the expected device cpu!")
    assert meta is not None and meta.devices == ("meta", "cpu")
    conv = parse_device_error(
        "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or input should "
        "be a MKLDNN tensor and weight is a dense tensor"
    )
    assert conv is not None and conv.devices == ("cpu", "cuda")
    assert parse_device_error("mat1 and mat2 shapes cannot be multiplied (1x2 and 3x4)") is None


def test_transfer_log_flags_same_source_in_several_steps_only():
    log = TransferLog()
    for step in range(3):
        log.record("/a.py", 10, ("X", 1, 0), step, 4096, "cpu", "cuda:0")  # the dataset, every step
        log.record("/a.py", 20, ("batch", step, 0), step, 256, "cpu", "cuda:0")  # a fresh batch each step
    repeated = log.repeated(min_steps=2)
    assert [(file, line) for file, line, _ in repeated] == [("/a.py", 10)]
    info = repeated[0][2]
    assert info["tensors"] == 1 and info["nbytes"] == 4096 and info["steps"] == 3 and info["copies"] is True


def test_repeated_transfer_message_is_truthful_about_no_ops():
    copying = repeated_transfer_message(
        {"tensors": 2, "steps": 3, "src": "cpu", "dst": "cuda:0", "copies": True}, "1 MiB"
    )
    assert "the same 2 tensors (1 MiB) are moved" in copying and "copies 1 MiB from cpu to cuda:0" in copying
    no_op = repeated_transfer_message({"tensors": 1, "steps": 2, "src": "cpu", "dst": "cpu", "copies": False}, "4 KiB")
    assert "is moved" in no_op and "here it is a no-op (cpu to cpu)" in no_op and "move it once" in no_op


def test_transfer_log_leaves_a_once_per_epoch_evaluation_transfer_alone():
    log = TransferLog()
    for step in (0, 32, 64):  # an evaluation helper moving its fixed images after each epoch of 32 steps
        log.record("/a.py", 30, ("images", 1, 0), step, 4096, "cpu", "cuda:0")
    for step in (1, 3, 5):  # a two-optimizer loop (GAN): the same data every iteration, two steps apart
        log.record("/a.py", 40, ("X", 1, 0), step, 4096, "cpu", "cuda:0")
    assert [(file, line) for file, line, _ in log.repeated(min_steps=2)] == [("/a.py", 40)]
