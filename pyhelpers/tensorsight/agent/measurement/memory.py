"""Memory measurement inside the training process: per-step figures, retained autograd graphs, OOM advice, and
``tensorsight.memory_top()``.

- ``memory_top()`` (public API, re-exported by the toolbox): the source lines that allocated the most Python memory,
  from ``tracemalloc`` (started on the first call, or at launch with the ``traceMemory`` option).
- ``MemoryMonitor.sample()`` (called by the measurement feature after each optimizer step): process RSS, CUDA
  allocated/reserved/peak when the program uses CUDA, and the device's memory from NVML (``pynvml``) at most once a
  second. No figure here synchronises the device.
- ``MemoryMonitor.scan_retained_graphs()``: finds a variable of the training loop that keeps the autograd graph of
  every step alive (``total_loss += loss``, ``losses.append(loss)``, a dict of EMA weights updated without
  ``detach``) by following autograd node sequence numbers (never object ids, which Python reuses), counting growth
  across the per-epoch restarts of ``train(epoch)``, and reports a ``memory`` finding at the line that grows it with
  the graph's measured size. It runs after every step at first, then in runs of consecutive steps
  (``retained_scan_due``).
- ``explain_out_of_memory`` (registered with ``tensorsight.agent.runtime.excepthook``): turns an out-of-memory error
  into a
  ``memory`` finding with the seed lesson's remedies ranked by the measured numbers (``core.memory``).
"""

from __future__ import annotations

import itertools
import linecache
import os
import sys
import time
import tracemalloc
from collections import deque
from dataclasses import dataclass
from types import FrameType, GetSetDescriptorType, TracebackType
from typing import Any

from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.op_calls import shielded
from tensorsight.agent.runtime.procfs import read_kept
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file, user_frames
from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.memory import (
    OomFacts,
    accumulation_line,
    item_accumulation_line,
    oom_summary,
    parse_oom_message,
    rank_oom_remedies,
)
from tensorsight.core.notation import format_bytes

RETAINED_CONFIRMATIONS = 3  # steps in which a variable must grow its graph chain before it is reported
RETAINED_SCAN_FIRST = 64  # the retained-graph scan runs after each of the first steps...
RETAINED_SCAN_PERIOD = 32  # ...then for RETAINED_SCAN_RUN consecutive steps of every RETAINED_SCAN_PERIOD
RETAINED_SCAN_RUN = RETAINED_CONFIRMATIONS + 1
MAX_GRAPH_NODES = 100_000  # the walk that sizes a retained graph stops there
MAX_ITEMS = 16  # tensor items of a dict (attributes of an object) followed by the retained-graph scan
MAX_OBJECTS = 4  # instances of the program's classes per frame whose attributes the scan reads


def retained_scan_due(step: int) -> bool:
    """Whether the retained-graph scan runs after optimizer step ``step``: every step at first, then a run of
    consecutive steps in each period. A chain grows one link per step, and growth is seen between two consecutive
    scans, so a run of ``RETAINED_CONFIRMATIONS + 1`` steps confirms a variable that started to keep its graphs
    late (after an evaluation, in a later phase) within one period, while a program of thousands of short steps
    pays for an eighth of them."""
    return step <= RETAINED_SCAN_FIRST or step % RETAINED_SCAN_PERIOD < RETAINED_SCAN_RUN


_own_classes: dict[type, bool] = {}  # class -> defined in a file of the program (its attributes are scanned)


def _instance_attributes(value: Any, torch: Any) -> list[tuple[str, Any]] | None:
    """The first ``MAX_ITEMS`` attributes of ``value`` that hold a tensor, a non-empty list or a dict, when ``value``
    is an instance of a class the program defines; None for anything else. A module's own tables (``_parameters``,
    ``_modules``...) are not its attributes here."""
    kind = type(value)
    own = _own_classes.get(kind)
    if own is None:
        module = sys.modules.get(getattr(kind, "__module__", "") or "")
        file = getattr(module, "__file__", None)
        descriptor = next((k.__dict__["__dict__"] for k in kind.__mro__ if "__dict__" in k.__dict__), None)
        # a plain class's ``__dict__`` (a property by that name would run the program's code)
        own = isinstance(file, str) and is_user_file(file) and isinstance(descriptor, GetSetDescriptorType)
        if len(_own_classes) < 4096:
            _own_classes[kind] = own
    if not own:
        return None
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - an instance without a __dict__
        return None
    if type(attributes) is not dict:
        return None
    module_type = torch.nn.Module
    found: list[tuple[str, Any]] = []
    for attribute, item in list(itertools.islice(attributes.items(), 4 * MAX_ITEMS)):
        if not isinstance(attribute, str) or (attribute.startswith("_") and isinstance(value, module_type)):
            continue
        if isinstance(item, torch.Tensor) or (type(item) in (list, dict) and item):
            found.append((attribute, item))
            if len(found) >= MAX_ITEMS:
                break
    return found


def _descends_from(node: Any, sequence: int, depth: int = 3, breadth: int = 32) -> bool:
    """Whether the autograd node with ``sequence`` number is among ``node``'s inputs up to ``depth`` nodes back
    (``total + loss`` links directly; ``decay * ema + (1 - decay) * param`` through the ``mul``)."""
    level = [node]
    for _ in range(depth):
        parents = [n for current in level for n, _ in current.next_functions if n is not None][:breadth]
        if any(int(parent._sequence_nr()) == sequence for parent in parents):
            return True
        level = parents
    return False


def graph_nodes(held: Any, limit: int = MAX_GRAPH_NODES) -> int:
    """How many autograd nodes the tensor(s) ``held`` keep alive (at most ``limit``): the measured size of a retained
    graph. Reads ``grad_fn``/``next_functions`` only; runs no op."""
    tensors = held if isinstance(held, list) else [held]
    stack = [t.grad_fn for t in tensors if getattr(t, "grad_fn", None) is not None]
    seen: set[int] = set()
    while stack and len(seen) < limit:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))  # ids are safe here: every node stays alive while the walk holds the graph
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return len(seen)


# ------------------------------------------------------------------------------------------------------ memory_top
@dataclass(frozen=True)
class AllocationSite:
    """One source line and the Python memory still allocated by it."""

    file: str
    line: int
    size_bytes: int
    count: int
    source: str


class MemoryTop(list[AllocationSite]):
    """The result of ``memory_top()``: a list of ``AllocationSite``, printable as a table."""

    note: str = ""

    def __str__(self) -> str:
        lines = [f"{'size':>10} {'blocks':>8}  where"]
        for site in self:
            where = f"{os.path.basename(site.file)}:{site.line}"
            lines.append(f"{format_bytes(site.size_bytes):>10} {site.count:>8}  {where}  {site.source}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


def memory_top(limit: int = 10, *, user_only: bool = False) -> MemoryTop:
    """The ``limit`` source lines holding the most Python-allocated memory right now (``tracemalloc``).

    The first call starts tracing if nothing did (launch option ``traceMemory`` starts it at launch), so it only
    sees allocations made after that; call it again later in the run. ``user_only`` keeps lines of your own files.
    Tensor storage is allocated by PyTorch's C++ allocator, outside ``tracemalloc``'s view: for tensors look at the
    ``memory`` events (CUDA allocated/reserved/peak, process RSS).
    """
    report = MemoryTop()
    if not tracemalloc.is_tracing():
        tracemalloc.start(1)
        report.note = "tracemalloc was not tracing: started now; call memory_top() again later to see allocations"
    try:
        snapshot = tracemalloc.take_snapshot()
    except Exception as exc:  # noqa: BLE001
        report.note = f"tracemalloc snapshot failed: {exc}"
        return report
    snapshot = snapshot.filter_traces(
        (
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
            tracemalloc.Filter(False, "<unknown>"),
            tracemalloc.Filter(False, os.path.join(PACKAGE_ROOT, "*")),
        )
    )
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if user_only and not is_user_file(frame.filename):
            continue
        source = linecache.getline(frame.filename, frame.lineno).strip()
        report.append(AllocationSite(frame.filename, frame.lineno, stat.size, stat.count, source))
        if len(report) >= max(1, int(limit)):
            break
    return report


# --------------------------------------------------------------------------------------------- per-step figures
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes() -> int | None:
    """The process's resident set, read each step through a kept descriptor (``runtime.procfs``)."""
    text = read_kept("/proc/self/statm")
    try:
        return int(text.split()[1]) * _PAGE_SIZE if text is not None else None
    except (ValueError, IndexError):
        return None


class MemoryMonitor:
    """Per-step memory figures and the retained-graph watch; one per process (owned by the measurement feature)."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self.history: deque[tuple[int, int]] = deque(maxlen=64)  # (step, bytes in use: CUDA allocated or RSS)
        self._nvml: Any = None
        self._nvml_handle: Any = None
        self._nvml_failed = False
        self._nvml_last = 0.0
        self._nvml_cached: dict[str, int] = {}
        self._chains: dict[tuple[int, str], tuple[int, int]] = {}  # (code, name) -> (node sequence nr, links seen)
        self._lists: dict[tuple[int, str], tuple[int, int]] = {}  # (code, name) -> (length, growths seen)
        self._first_rss: dict[tuple[int, str], tuple[int, int | None]] = {}
        self._reported: set[tuple[int, str]] = set()
        # one finding per growing line, and per container (a dict seen from two frames, or under two names)
        self._reported_lines: set[tuple[str, int]] = set()
        self._reported_containers: set[int] = set()
        self._scan_reported: set[int] = set()  # tensors reported in the scan under way
        self.retained_name: str | None = None
        self.parameter_bytes: int | None = None

    def _cuda(self) -> Any:
        cuda = getattr(self._torch, "cuda", None)
        try:
            if cuda is not None and cuda.is_available() and cuda.is_initialized():
                return cuda
        except Exception:  # noqa: BLE001
            return None
        return None

    @never_raise(fallback={})
    def sample(self, step: int) -> dict[str, int]:
        """The ``memory`` event's figures for this step (no device synchronisation)."""
        figures: dict[str, int] = {}
        rss = _rss_bytes()
        if rss is not None:
            figures["cpu_rss_bytes"] = rss
        cuda = self._cuda()
        if cuda is not None:
            figures["cuda_allocated"] = int(cuda.memory_allocated())
            figures["cuda_reserved"] = int(cuda.memory_reserved())
            figures["cuda_peak"] = int(cuda.max_memory_allocated())
            figures.update(self._nvml_figures(cuda))
        in_use = figures.get("cuda_allocated", figures.get("cpu_rss_bytes"))
        if in_use is not None:
            self.history.append((step, in_use))
        return figures

    def _nvml_figures(self, cuda: Any) -> dict[str, int]:
        now = time.monotonic()
        if self._nvml_failed or now - self._nvml_last < 1.0:
            return self._nvml_cached
        self._nvml_last = now
        try:
            if self._nvml is None:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
                self._nvml_handle = self._device_handle(pynvml, cuda)
            info = self._nvml.nvmlDeviceGetMemoryInfo(self._nvml_handle)
            self._nvml_cached = {"nvml_used": int(info.used), "nvml_total": int(info.total)}
        except Exception as exc:  # noqa: BLE001 - no NVML (driver, container): the CUDA figures still come
            self._nvml_failed = True
            report_once("nvml", f"NVML device memory unavailable: {type(exc).__name__}: {exc}")
            self._nvml_cached = {}
        return self._nvml_cached

    @staticmethod
    def _device_handle(pynvml: Any, cuda: Any) -> Any:
        index = cuda.current_device()
        bus_id = getattr(cuda.get_device_properties(index), "pci_bus_id", None)
        if bus_id:
            try:
                return pynvml.nvmlDeviceGetHandleByPciBusId(str(bus_id))
            except Exception:  # noqa: BLE001 - fall back to the index (right unless CUDA_VISIBLE_DEVICES reorders)
                pass
        return pynvml.nvmlDeviceGetHandleByIndex(index)

    def growth_per_step(self) -> float | None:
        """Average bytes gained per step over the recent history when memory kept rising, else None."""
        if len(self.history) < 3:
            return None
        points = list(self.history)
        rises = sum(1 for a, b in itertools.pairwise(points) if b[1] > a[1])
        if rises < 0.7 * (len(points) - 1):
            return None
        (first_step, first), (last_step, last) = points[0], points[-1]
        return (last - first) / max(1, last_step - first_step) if last > first else None

    # ----------------------------------------------------------------------------------------- retained graphs
    @never_raise(fallback=[])
    def scan_retained_graphs(self, frame: FrameType | None, step: int, max_frames: int = 3) -> list[Finding]:
        """Look at the training loop's variables (innermost user frames) for graph chains growing step after step."""
        findings: list[Finding] = []
        self._scan_reported.clear()
        for user in user_frames(frame, max_frames):
            findings.extend(self._scan_frame(user, step))
        return findings

    def _scan_frame(self, frame: FrameType, step: int) -> list[Finding]:
        tensor_type = self._torch.Tensor
        code = frame.f_code
        found: list[Finding] = []
        for name, value in self._scanned_values(frame):
            key = (id(code), name)
            if isinstance(value, tensor_type):
                with shielded([value]):  # reading grad_fn must not run a tensor subclass's __torch_function__
                    links = self._follow_chain(key, value)
            elif isinstance(value, list) and value:
                with shielded([item for item in value[-1:] if isinstance(item, tensor_type)]):
                    links = self._follow_list(key, value, tensor_type)
            elif type(value) is dict and value:
                links = self._follow_items(key, value, tensor_type)
            else:
                continue
            if links == 1:
                self._first_rss[key] = (step, _rss_bytes())
            if links >= RETAINED_CONFIRMATIONS and key not in self._reported:
                self._reported.add(key)
                # one finding per container, and per tensor in one scan (a trainer's attribute seen as ``self.total``
                # in its method and as ``trainer.total`` in ``main()``: the innermost frame, scanned first, names it)
                reported = self._reported_containers if isinstance(value, (dict, list)) else self._scan_reported
                if id(value) in reported:
                    continue
                reported.add(id(value))
                items = value.values() if isinstance(value, dict) else value
                held = value if isinstance(value, tensor_type) else [v for v in items if isinstance(v, tensor_type)]
                finding = self._retained_finding(frame, name, links, step, key, graph_nodes(held))
                if finding is not None and (finding.file, finding.line) not in self._reported_lines:
                    self._reported_lines.add((finding.file, finding.line))
                    found.append(finding)
        return found

    def _scanned_values(self, frame: FrameType) -> list[tuple[str, Any]]:
        """The frame's variables, then the attributes of the first ``MAX_OBJECTS`` of them that are instances of the
        program's own classes (a trainer's ``self.running_loss``), named as written (``self.running_loss``): at
        most ``MAX_ITEMS`` attributes each that hold a tensor, a list or a dict, read from the instance's
        ``__dict__`` (no property, no ``__getattr__``: nothing of the program runs)."""
        values = list(frame.f_locals.items())
        objects = 0
        for name, value in values[:]:
            attributes = _instance_attributes(value, self._torch)
            if attributes is None:
                continue
            objects += 1
            values.extend((f"{name}.{attribute}", item) for attribute, item in attributes)
            if objects >= MAX_OBJECTS:
                break
        return values

    def _follow_chain(self, key: tuple[int, str], value: Any) -> int:
        """Steps seen so far in which ``value``'s graph grew out of the graph it held at the previous scan.

        The count survives a restart of the chain: ``total_loss = 0`` at the top of ``train(epoch)`` starts a new
        chain each epoch, and an epoch of a few steps would otherwise never reach ``RETAINED_CONFIRMATIONS``, while
        each epoch still keeps all its steps' graphs alive. A variable given a fresh graph every step
        (``loss = ...``) never links, so its count stays 0.
        """
        node = value.grad_fn
        previous = self._chains.get(key)
        links = previous[1] if previous is not None else 0
        if node is None:
            if previous is not None:
                self._chains[key] = (-1, links)
            return 0
        sequence = int(node._sequence_nr())
        if previous is not None and previous[0] != sequence:
            if _descends_from(node, previous[0]):
                links += 1
                self._chains[key] = (sequence, links)
                return links
            self._chains[key] = (sequence, links)  # a new chain (or a fresh value): no growth seen this step
            return 0
        self._chains[key] = (sequence, links)  # same graph as last scan (no step in between): neither growth nor reset
        return 0

    def _follow_items(self, key: tuple[int, str], value: dict[Any, Any], tensor_type: Any) -> int:
        """A dict of tensors each updated from itself every step (an EMA of the weights without ``detach``): the
        most grown of its first ``MAX_ITEMS`` items that are tensors.

        Only those items are copied out of the dict (in C, so no other thread mutates it meanwhile): a module-level
        vocabulary of 50,000 entries in the scanned frame costs no more than a dict of 16."""
        links = 0
        for index, (item_key, item) in enumerate(list(itertools.islice(value.items(), MAX_ITEMS))):
            if isinstance(item, tensor_type):
                with shielded([item]):
                    links = max(links, self._follow_chain((key[0], f"{key[1]}[{index}:{item_key!r}]"), item))
        return links

    def _follow_list(self, key: tuple[int, str], value: list[Any], tensor_type: Any) -> int:
        last = value[-1]
        holds_graph = isinstance(last, tensor_type) and last.grad_fn is not None
        previous = self._lists.get(key)
        if not holds_graph:
            self._lists.pop(key, None)
            return 0
        growths = 0
        if previous is not None:
            growths = previous[1] + 1 if len(value) > previous[0] else previous[1]
        self._lists[key] = (len(value), growths)
        return growths

    def _retained_finding(
        self, frame: FrameType, name: str, links: int, step: int, key: tuple[int, str], nodes: int
    ) -> Finding:
        code = frame.f_code
        filename = os.path.abspath(code.co_filename)
        scope = None if code.co_name == "<module>" else code.co_firstlineno
        source = "".join(linecache.getlines(filename))
        line = (
            accumulation_line(source, name, scope, frame.f_lineno)
            or item_accumulation_line(source, name, frame.f_lineno)
            or frame.f_lineno
        )
        self.retained_name = name
        first_step, first_rss = self._first_rss.get(key, (step, None))
        now_rss = _rss_bytes()
        growth = now_rss - first_rss if now_rss is not None and first_rss is not None else None
        statement = linecache.getline(filename, line).strip()
        measured = t("{0} autograd nodes held", f"{nodes:,}{'+' if nodes >= MAX_GRAPH_NODES else ''}")
        if growth is not None and growth > 0:
            measured += t(", process memory +{0} since then", format_bytes(growth))
        message = t(
            "`{name}` keeps the autograd graph of every step alive ({links} steps so far, since step {first_step}; "
            "{measured}): `{statement}` chains each step's loss into one ever-growing graph, so memory grows every "
            "step. Accumulate a number instead: `{name} += loss.item()` (or `loss.detach()`)",
            name=name,
            links=links,
            first_step=first_step,
            measured=measured,
            statement=statement,
        )
        details: dict[str, Any] = {
            "variable": name,
            "steps_retained": links,
            "since_step": first_step,
            "graph_nodes": nodes,
        }
        if growth is not None:
            details["rss_growth_bytes"] = growth
        return Finding("memory", "warning", message, filename, line, step=step, details=details)


# ------------------------------------------------------------------------------------------------ out of memory
_monitor: MemoryMonitor | None = None
_eval_with_grad: Any = None  # callable -> bool, set by the measurement feature (the phase clock knows)


def set_context(monitor: MemoryMonitor | None, eval_with_grad: Any = None) -> None:
    """Give the OOM explainer the figures recorded during the run (called by the measurement feature)."""
    global _monitor, _eval_with_grad
    _monitor = monitor
    _eval_with_grad = eval_with_grad


def _is_out_of_memory(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom_type is not None and isinstance(oom_type, type) and isinstance(exc, oom_type):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _user_line_of(tb: TracebackType | None) -> tuple[str, int] | None:
    where = None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            where = (os.path.abspath(tb.tb_frame.f_code.co_filename), tb.tb_lineno)
        tb = tb.tb_next
    return where


def explain_out_of_memory(exc: BaseException) -> list[Finding] | None:
    """A ``memory`` finding with ranked remedies for an out-of-memory error (None for any other exception)."""
    if not _is_out_of_memory(exc):
        return None
    where = _user_line_of(exc.__traceback__)
    if where is None:
        return None
    figures = parse_oom_message(str(exc))
    monitor = _monitor
    try:
        in_eval = bool(_eval_with_grad()) if callable(_eval_with_grad) else False
    except Exception:  # noqa: BLE001
        in_eval = False
    facts = OomFacts(
        requested=figures.get("requested"),
        capacity=figures.get("capacity"),
        allocated=figures.get("allocated"),
        reserved_unallocated=figures.get("reserved_unallocated"),
        growth_per_step=monitor.growth_per_step() if monitor else None,
        steps_completed=steps.current_step(),
        retained_graph_name=monitor.retained_name if monitor else None,
        in_eval_with_grad=in_eval,
        parameter_bytes=monitor.parameter_bytes if monitor else None,
    )
    remedies = rank_oom_remedies(facts)
    device = "CUDA" if "CUDA" in str(exc) else "CPU"
    summary = oom_summary(facts)
    top = "; ".join(f"{i}) {r.title} — {r.why}" for i, r in enumerate(remedies[:3], start=1))
    message = t("{0} out of memory", device) + (f" ({summary})" if summary else "") + t(". Most likely fixes: {0}", top)
    details = {
        "figures": figures,
        "steps_completed": facts.steps_completed,
        "remedies": [{"title": r.title, "why": r.why} for r in remedies],
    }
    return [Finding("memory", "error", message, where[0], where[1], step=facts.steps_completed, details=details)]
