"""A NaN/Inf birth as the user sees it: the record (Variables' ``(nonfinite)`` entry, ``last_nonfinite()``), its
event and finding, its wording, and the one place that publishes it and stops the debugger in the user's frame.

Every section of the sentinel reports through ``publish`` (a birth seen where it happens) or ``publish_found_later``
(a birth noticed after its line ran)."""

from __future__ import annotations

import os
import types
from typing import Any

from tensorsight.agent.debugger import pause, waiting
from tensorsight.agent.runtime import events, identity, steps
from tensorsight.agent.runtime.guard import say
from tensorsight.agent.runtime.tensor_walk import is_tensor
from tensorsight.agent.sentinel.reading import elements, user_frame
from tensorsight.agent.sentinel.record import NonFiniteRecord
from tensorsight.agent.sentinel.state import lock, sw
from tensorsight.agent.sentinel.view_link import stop_reason
from tensorsight.core import protocol
from tensorsight.core.findings import Finding, finding_context
from tensorsight.core.l10n import t
from tensorsight.core.nonfinite import NonFiniteCounts
from tensorsight.core.phase_names import phase_label


def publish(
    phase: str,
    op: str,
    counts: NonFiniteCounts,
    frame: types.FrameType | None,
    *,
    what: str,
    title: str,
    **where: Any,
) -> NonFiniteRecord:
    """Make the record of a birth seen where it happens and report it at ``frame`` (see ``make_record``)."""
    record = make_record(phase, op, counts, frame, what=what, title=title, **where)
    report(record, frame)
    return record


def make_record(
    phase: str,
    op: str,
    counts: NonFiniteCounts,
    frame: types.FrameType | None,
    *,
    what: str,
    title: str,
    module: str | None = None,
    node: str | None = None,
    file: str | None = None,
    line: int | None = None,
    inputs: tuple[Any, ...] = (),
    output: Any = None,
    incoming: tuple[Any, ...] = (),
    produced: tuple[Any, ...] = (),
    step: int | None = None,
    replayed: bool = False,
    details: dict[str, Any] | None = None,
) -> NonFiniteRecord:
    if file is None and frame is not None:
        file, line = os.path.abspath(frame.f_code.co_filename), frame.f_lineno
    elif file is not None:
        file = os.path.abspath(file)
    step_number = step if step is not None else steps.current_step() + 1
    rank = identity.rank()
    where = f"{os.path.basename(file)}:{line}" if file else t("unknown location")
    summary = t("{what} — {phase}", what=what, phase=phase_label(phase))
    # the step and rank are the record's fields (the finding, the event): whoever shows the message adds them
    message = t("{what} — {context}, at {where}", what=what, context=phase_label(phase), where=where)
    details = {**({"replayed": True} if replayed else {}), **(details or {})}
    count = elements([output] if is_tensor(output) else list(produced))
    return NonFiniteRecord(
        phase=phase,
        op=op,
        title=title,
        message=message,
        summary=summary,
        file=file,
        line=line,
        step=step_number,
        rank=rank,
        nan=counts.nan,
        posinf=counts.posinf,
        neginf=counts.neginf,
        elements=count,
        module=module,
        node=node,
        inputs=inputs,
        output=output,
        incoming_grads=incoming,
        produced_grads=produced,
        details=details,
    )


def report(record: NonFiniteRecord, frame: types.FrameType | None, line_shown: int | None = None) -> None:
    """Publish a birth (event, finding, Debug Console line) and, the first time, stop the debugger at ``frame``."""
    with lock:
        if sw.first_reported:
            return
        sw.first_reported = True
    sw.last = record
    events.send(record.event())
    finding = record.finding()
    if finding is not None:
        events.emit_finding(finding)
    shown = record.message + finding_context(record.step, record.rank)
    if sw.origin == "watch":  # an unattended run: wait for an editor to attach, then stop in it as a launch does
        if frame is None or not waiting.hold(f"{record.title}: {shown}"):
            return
        _resend_to_late_hub(record, finding)
    else:
        reason = stop_reason(record, shown) if sw.origin == "debugger" else shown
        say(f"{record.title}: {reason}")
        if sw.origin != "debugger" or frame is None or not _stops_allowed() or pause.thread_held_by_debugger():
            return
    pause.stop_in_frame(frame, record.title, stop_reason(record, shown), {"(nonfinite)": record}, line=line_shown)


def _resend_to_late_hub(record: NonFiniteRecord, finding: Finding | None) -> None:
    """The birth's event and finding, for the hub the attached editor named (``debugger.attach``): sent before it
    was known, they reached only this process's own listeners."""
    from tensorsight.agent.runtime import hub_client

    client = hub_client.client()
    if client is None:
        return
    client.offer(events.wire_form(record.event()))
    if finding is not None:
        client.offer(events.wire_form(protocol.FindingEvent(finding=finding.to_dict())))


def _stops_allowed() -> bool:
    """False on a rank the ``ranks`` option leaves running (``agent.distributed``); a failure to ask allows the stop."""
    from tensorsight.agent.distributed.ranks import stops_allowed

    try:
        return bool(stops_allowed())
    except Exception:  # noqa: BLE001
        return True


def title_of(counts: NonFiniteCounts, born: bool) -> str:
    """The stop's headline (the editor's exception title): where the value was born, or where it came in."""
    what = "NaN" if counts.nan else "Inf"
    return t("{0} born here", what) if born else t("{0} came in here", what)


def made_text(op: str, made: NonFiniteCounts, values: int, carried: NonFiniteCounts, module: str | None = None) -> str:
    """What an op made and from what: "from finite inputs", or, when the inputs carried Inf and the op made NaN of
    it (``inf - inf``, a linear layer over a -Inf feature), the Inf they held."""
    if carried:
        if module is not None:
            return t(
                "{0} made {1} (of {2} values) from inputs holding {3} in {4}",
                op,
                counts_text(made),
                values,
                counts_text(carried),
                module,
            )
        return t(
            "{0} made {1} (of {2} values) from inputs holding {3}", op, counts_text(made), values, counts_text(carried)
        )
    if module is not None:
        return t("{0} made {1} (of {2} values) from finite inputs in {3}", op, counts_text(made), values, module)
    return t("{0} made {1} (of {2} values) from finite inputs", op, counts_text(made), values)


def counts_text(counts: NonFiniteCounts) -> str:
    parts = []
    if counts.nan:
        parts.append(f"{counts.nan} NaN")
    if counts.posinf:
        parts.append(f"{counts.posinf} +Inf")
    if counts.neginf:
        parts.append(f"{counts.neginf} -Inf")
    return ", ".join(parts) or t("no NaN/Inf")


def publish_found_later(record: NonFiniteRecord, where: Any, when: str) -> None:
    """Report a birth noticed after its line ran (a backward node, an optimizer step). When the frame that ran that
    line is still on the stack (typically the training loop), the stop is shown on that line of that frame."""
    frame = user_frame()
    line_shown = None
    if where is not None and frame is not None:
        walker: types.FrameType | None = frame
        while walker is not None:
            if id(walker) == where[2] and walker.f_code is where[3]:
                frame, line_shown = walker, where[1]
                break
            walker = walker.f_back
    if frame is not None:
        record.stopped_at = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        if line_shown is None or line_shown != frame.f_lineno:
            found = t(" (found when {0}, at {1})", when, record.stopped_at)
            record.message += found
            record.summary += found
    report(record, frame, line_shown=line_shown)
