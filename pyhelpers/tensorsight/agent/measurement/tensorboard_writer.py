"""Writes real TensorBoard event files (scalars and histograms) from the measurement feature, without TensorFlow.

Called by ``tensorsight.agent.measurement.pipeline`` when the ``tensorboardDir`` launch option is set: loss, lr and
gradient
norms every step, weight and gradient histograms every ``histogramEvery`` steps. It uses the ``tensorboard``
package's own event-file writer and protobufs (``tensorboard.summary.writer.event_file_writer`` and
``tensorboard.compat.proto``), imported lazily on first use; the writer queues events and a background thread
writes them, so a step pays for building a few small protobufs only. When ``tensorboard`` is not installed the user
is told once and nothing else happens. Open the run with ``tensorboard --logdir <tensorboardDir>``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tensorsight.agent.runtime.events import send
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.core import protocol


class TensorBoardWriter:
    """One event file in ``logdir``; every method is safe to call after ``close()`` (it does nothing)."""

    def __init__(self, logdir: str) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = os.path.abspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        self._event_pb2 = event_pb2
        self._summary_pb2 = summary_pb2
        self._writer: Any = EventFileWriter(self.logdir, max_queue_size=100, flush_secs=10)

    def _write(self, step: int, values: list[Any]) -> None:
        if self._writer is None or not values:
            return
        summary = self._summary_pb2.Summary(value=values)
        self._writer.add_event(self._event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    @never_raise()
    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        """One scalar per tag at ``step`` (non-finite values are written as they are: TensorBoard shows them)."""
        value_cls = self._summary_pb2.Summary.Value
        self._write(step, [value_cls(tag=tag, simple_value=float(v)) for tag, v in values.items()])

    @never_raise()
    def histogram(
        self,
        step: int,
        tag: str,
        edges: Sequence[float],
        counts: Sequence[float],
        stats: Mapping[str, float],
    ) -> None:
        """A histogram from bucket ``edges`` (len n+1) and ``counts`` (len n), with min/max/num/sum/sum_squares."""
        if len(edges) != len(counts) + 1 or not counts:
            return
        proto = self._summary_pb2.HistogramProto(
            min=float(stats.get("min", edges[0])),
            max=float(stats.get("max", edges[-1])),
            num=float(stats.get("num", sum(counts))),
            sum=float(stats.get("sum", 0.0)),
            sum_squares=float(stats.get("sum_squares", 0.0)),
            bucket_limit=[float(e) for e in edges[1:]],
            bucket=[float(c) for c in counts],
        )
        self._write(step, [self._summary_pb2.Summary.Value(tag=tag, histo=proto)])

    @never_raise()
    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    @never_raise()
    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()


def open_writer(logdir: str) -> TensorBoardWriter | None:
    """A writer on ``logdir``, or None (with one clear message) when ``tensorboard`` is missing or the folder fails."""
    try:
        writer = TensorBoardWriter(logdir)
    except ImportError:
        report_once(
            "tensorboard-missing",
            "tensorboardDir is set but the `tensorboard` package is not installed in this environment "
            "(pip install tensorboard); no TensorBoard files will be written",
        )
        return None
    except Exception as exc:  # noqa: BLE001 - an unwritable folder must not break the run
        report_once("tensorboard-open", f"cannot write TensorBoard files to {logdir!r}: {type(exc).__name__}: {exc}")
        return None
    send(protocol.TensorboardEvent(logdir=writer.logdir, command=f"tensorboard --logdir {writer.logdir}"))
    return writer
