"""GPU monitor: utilisation and memory per NVIDIA GPU through NVML (``pynvml``, from ``nvidia-ml-py``).

The server polls ``GpuMonitor.snapshot`` about once a second while a debug session runs and sends the result as the
``tensorsight/gpu`` notification (the extension's status bar shows it). Machines without an NVIDIA GPU, without the
driver's NVML library, or without ``nvidia-ml-py`` get one clean ``{"available": false, "message": ...}`` state and no
errors. The NVML module is injected at one seam (the constructor) so tests can run a fake one.

Payload: ``{"available": bool, "gpus": [{"index", "name", "utilization" (percent), "memoryUsed", "memoryTotal"
(bytes), "processMemoryUsed"? (bytes used by the debugged processes, when NVML reports per-process usage)}],
"message"?: str}``.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from typing import Any

RETRY_INIT_SECONDS = 30.0  # after NVML failed to start, try again at most this often


def load_pynvml() -> Any:
    return importlib.import_module("pynvml")


class GpuMonitor:
    """Owns the NVML session; ``snapshot`` never raises."""

    def __init__(self, nvml: Any | None = None, loader: Callable[[], Any] = load_pynvml) -> None:
        self._nvml = nvml
        self._loader = loader
        self._initialised = False
        self._failure: str | None = None
        self._failed_at = 0.0

    def snapshot(self, pids: Iterable[int] = ()) -> dict[str, Any]:
        """The GPUs now; ``pids`` are the debugged processes whose own GPU memory is summed per GPU."""
        nvml = self._start()
        if nvml is None:
            return {"available": False, "gpus": [], "message": self._failure or "no NVIDIA GPU"}
        error = _error_type(nvml)
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except error as exc:
            return {"available": False, "gpus": [], "message": f"NVML could not list GPUs: {_reason(exc)}"}
        if count == 0:
            return {"available": False, "gpus": [], "message": "no NVIDIA GPU found"}
        wanted = {int(p) for p in pids}
        gpus = []
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except error:
                continue
            gpus.append(self._describe(nvml, error, index, handle, wanted))
        return {"available": bool(gpus), "gpus": gpus, **({} if gpus else {"message": "no NVIDIA GPU answered"})}

    def close(self) -> None:
        if self._initialised and self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down; nothing to report to
                pass
        self._initialised = False

    # ------------------------------------------------------------------ internals
    def _start(self) -> Any | None:
        if self._initialised:
            return self._nvml
        if self._failure is not None and time.monotonic() - self._failed_at < RETRY_INIT_SECONDS:
            return None
        try:
            nvml = self._nvml if self._nvml is not None else self._loader()
        except ImportError:
            return self._fail("no GPU monitoring: the nvidia-ml-py package (pynvml) is not installed")
        try:
            nvml.nvmlInit()
        except _error_type(nvml) as exc:
            return self._fail(f"no NVIDIA GPU ({_reason(exc)})")
        except OSError as exc:
            return self._fail(f"no NVIDIA GPU (NVML library not loadable: {exc})")
        self._nvml = nvml
        self._initialised = True
        self._failure = None
        return nvml

    def _fail(self, message: str) -> Any | None:
        """Remember why NVML is unusable (shown in the payload) and when, for the retry delay; returns None."""
        self._failure = message
        self._failed_at = time.monotonic()
        return None

    def _describe(
        self, nvml: Any, error: type[BaseException], index: int, handle: Any, pids: set[int]
    ) -> dict[str, Any]:
        gpu: dict[str, Any] = {"index": index, "name": f"GPU {index}", "utilization": None}
        try:
            name = nvml.nvmlDeviceGetName(handle)
            gpu["name"] = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        except error:
            pass
        try:
            gpu["utilization"] = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except error:
            pass  # e.g. not supported on a MIG slice
        try:
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            gpu["memoryUsed"] = int(memory.used)
            gpu["memoryTotal"] = int(memory.total)
        except error:
            gpu["memoryUsed"] = gpu["memoryTotal"] = None
        if pids:
            used = _process_memory(nvml, error, handle, pids)
            if used is not None:
                gpu["processMemoryUsed"] = used
        return gpu


def _process_memory(nvml: Any, error: type[BaseException], handle: Any, pids: set[int]) -> int | None:
    """Bytes the given processes use on this GPU (None when NVML cannot tell, e.g. inside a container)."""
    total: int | None = None
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        function = getattr(nvml, getter, None)
        if function is None:
            continue
        try:
            processes = function(handle)
        except error:
            continue
        for process in processes or ():
            used = getattr(process, "usedGpuMemory", None)
            if getattr(process, "pid", None) in pids and isinstance(used, int):
                total = (total or 0) + used
    return total


def _error_type(nvml: Any) -> type[BaseException]:
    error = getattr(nvml, "NVMLError", None)
    return error if isinstance(error, type) and issubclass(error, BaseException) else Exception


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
