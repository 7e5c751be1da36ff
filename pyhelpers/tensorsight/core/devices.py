"""Pure device-mismatch logic shared by ``check_devices``, the agent's observers and the shape/device explainer.

Devices are strings as torch prints them (``"cpu"``, ``"cuda:0"``, ``"meta"``). The rules:
- a model's parameters and buffers should live on one device (several is either model parallelism or a forgotten
  ``.to()``; ``meta`` means the weights were never materialised);
- every tensor fed to the model should be on the model's device;
- the same data moved with ``.to()`` at every training step is a transfer that belongs before the loop.
``parse_device_error`` reads torch's "same device" error messages.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.l10n import t


def normalize_device(device: Any, current_index: int = 0) -> str:
    """``"cuda"`` -> ``"cuda:0"`` (the current index), ``torch.device("cpu")`` -> ``"cpu"``."""
    text = str(device)
    if text in ("cuda", "xpu", "mps", "npu") and current_index is not None:
        return f"{text}:{current_index}" if text != "mps" else "mps"
    return text


@dataclass(frozen=True)
class DeviceIssue:
    """One device problem: ``subject`` (a parameter group or an input), where it is, and where it should be."""

    subject: str
    device: str
    expected: str | None
    severity: str
    message: str


def _describe_counts(by_device: Mapping[str, Sequence[str]]) -> str:
    parts = []
    for device, names in sorted(by_device.items(), key=lambda kv: -len(kv[1])):
        sample = ", ".join(names[:2]) + (", ..." if len(names) > 2 else "")
        parts.append(f"{len(names)} on {device} ({sample})")
    return "; ".join(parts)


def model_device(tensor_devices: Mapping[str, str]) -> str | None:
    """The device holding most of a model's parameters/buffers (ties: the non-CPU one), or None when it has none."""
    counts: dict[str, int] = {}
    for device in tensor_devices.values():
        counts[device] = counts.get(device, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda d: (counts[d], d != "cpu", d))


def device_issues(
    model_tensors: Mapping[str, str],
    inputs: Iterable[tuple[str, str]] = (),
    model_name: str = "model",
) -> list[DeviceIssue]:
    """Device problems of a model (``{param or buffer name: device}``) and the tensors fed to it.

    ``inputs`` are ``(name, device)`` pairs. An empty model (no parameters) takes its device from the first input.
    """
    issues: list[DeviceIssue] = []
    by_device: dict[str, list[str]] = {}
    for name, device in model_tensors.items():
        by_device.setdefault(device, []).append(name)
    expected = model_device(model_tensors)
    if "meta" in by_device:
        names = by_device["meta"]
        issues.append(
            DeviceIssue(
                model_name,
                "meta",
                None,
                "error",
                t(
                    "{0} has {1} parameter(s)/buffer(s) on the meta device ({2}): "
                    "they have no data; materialise the model (e.g. to_empty() then load weights) before training",
                    model_name,
                    len(names),
                    ", ".join(names[:3]),
                ),
            )
        )
    if len(by_device) > 1:
        issues.append(
            DeviceIssue(
                model_name,
                ",".join(sorted(by_device)),
                expected,
                "warning",
                t(
                    "{0}'s parameters and buffers are split across devices: {1} "
                    "(unless this is deliberate model parallelism, a .to(device) was missed)",
                    model_name,
                    _describe_counts(by_device),
                ),
            )
        )
    input_list = list(inputs)
    if expected is None and input_list:
        expected = input_list[0][1]
    for name, device in input_list:
        if expected == "meta" and device != "meta":
            issues.append(
                DeviceIssue(
                    name,
                    device,
                    expected,
                    "error",
                    t(
                        "{name} is on {device} but {model}'s weights are on the meta device (no data): materialise "
                        "the model (e.g. .to_empty(device={quoted}) then load its weights) before calling it",
                        name=name,
                        device=device,
                        model=model_name,
                        quoted=repr(device),
                    ),
                )
            )
        elif expected is not None and device != expected:
            issues.append(
                DeviceIssue(
                    name,
                    device,
                    expected,
                    "error",
                    t(
                        "{name} is on {device} but {model} is on {expected}: move it with .to({quoted}) "
                        "(or move the model) before the call",
                        name=name,
                        device=device,
                        model=model_name,
                        expected=expected,
                        quoted=repr(expected),
                    ),
                )
            )
    return issues


# ---- device errors raised by torch ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceError:
    devices: tuple[str, ...]
    summary: str
    argument: str | None = None


_SAME_DEVICE = re.compile(
    r"Expected all tensors to be on the same device, but (?:found at least two devices|got [^,]+), "
    r"(?P<a>[\w:]+) and (?P<b>[\w:]+)!?(?: \(when checking argument (?:for argument )?(?P<arg>\w+)[^)]*\))?"
)
_NOT_EXPECTED = re.compile(r"Tensor on device (?P<a>[\w:]+) is not on the expected device (?P<b>[\w:]+)!")
_TYPE_MISMATCH = re.compile(r"Input type \((?P<a>[\w.]+)\) and weight type \((?P<b>[\w.]+)\) should be the same")


def _device_of_type(type_name: str) -> str:
    return "cuda" if ".cuda." in type_name else "cpu"


def parse_device_error(message: str) -> DeviceError | None:
    """Recognise torch's "tensors on different devices" errors; None when ``message`` is not one."""
    match = _SAME_DEVICE.search(message)
    if match:
        a, b = match["a"], match["b"]
        return DeviceError((a, b), t("tensors on two devices met in one operation: {0} and {1}", a, b), match["arg"])
    match = _NOT_EXPECTED.search(message)
    if match:
        a, b = match["a"], match["b"]
        return DeviceError((a, b), t("a tensor on {0} met tensors on {1}", a, b))
    match = _TYPE_MISMATCH.search(message)
    if match:
        a, b = _device_of_type(match["a"]), _device_of_type(match["b"])
        if a != b:
            return DeviceError((a, b), t("the input is on {0} but the layer's weights are on {1}", a, b))
    return None


# ---- data moved at every step --------------------------------------------------------------------------------------


@dataclass
class TransferLog:
    """Records ``.to()``/``.cuda()`` calls per user line and step; finds the same data moved at several steps.

    ``source`` identifies the data moved (e.g. storage pointer, shape and dtype), so moving a fresh batch every step
    (normal) is told apart from moving the same dataset every step (a transfer that belongs before the loop).
    """

    steps_by_site: dict[tuple[str, int, Any], set[int]] = field(default_factory=dict)
    info_by_site: dict[tuple[str, int, Any], dict[str, Any]] = field(default_factory=dict)

    def record(self, file: str, line: int, source: Any, step: int, nbytes: int, src: str, dst: str) -> None:
        key = (file, line, source)
        self.steps_by_site.setdefault(key, set()).add(step)
        info = self.info_by_site.setdefault(key, {"nbytes": 0, "src": src, "dst": dst, "copies": src != dst})
        info["nbytes"] = max(info["nbytes"], nbytes)

    def repeated(self, min_steps: int = 2, max_gap: int = 2) -> list[tuple[str, int, dict[str, Any]]]:
        """``(file, line, info)`` per line that moved the same data in at least ``min_steps`` distinct steps, two of
        them at most ``max_gap`` steps apart: a transfer of every step (or every iteration of a two-optimizer loop),
        not an evaluation helper that moves its fixed set once per epoch."""
        by_line: dict[tuple[str, int], dict[str, Any]] = {}
        for key, steps in self.steps_by_site.items():
            ordered = sorted(steps)
            if len(steps) < min_steps or not any(b - a <= max_gap for a, b in itertools.pairwise(ordered)):
                continue
            file, line, _ = key
            info = self.info_by_site[key]
            merged = by_line.setdefault(
                (file, line), {"tensors": 0, "nbytes": 0, "steps": 0, "src": info["src"], "dst": info["dst"]}
            )
            merged["tensors"] += 1
            merged["nbytes"] += info["nbytes"]
            merged["steps"] = max(merged["steps"], len(steps))
            merged["copies"] = merged.get("copies", False) or info["copies"]
        return [(file, line, info) for (file, line), info in sorted(by_line.items())]


def repeated_transfer_message(info: Mapping[str, Any], human_size: str) -> str:
    """The finding text for the same data moved at every step (truthful about whether it copies here)."""
    single = info.get("tensors", 1) == 1
    if info.get("copies"):
        cost = t("each call copies {0} from {1} to {2}", human_size, info["src"], info["dst"])
    else:
        cost = t(
            "here it is a no-op ({0} to {1}), but on an accelerator each call copies {2} per step",
            info["src"],
            info["dst"],
            human_size,
        )
    if single:
        return t(
            "the same tensor ({size}) is moved with .to()/.cuda() at every training step ({steps} steps seen): "
            "{cost}; move it once, before the loop",
            size=human_size,
            steps=info["steps"],
            cost=cost,
        )
    return t(
        "the same {count} tensors ({size}) are moved with .to()/.cuda() at every training step ({steps} steps seen): "
        "{cost}; move it once, before the loop",
        count=info["tensors"],
        size=human_size,
        steps=info["steps"],
        cost=cost,
    )
