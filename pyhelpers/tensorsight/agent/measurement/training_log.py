"""The training log: a stdlib ``logging`` file with timestamps and levels — step, loss, lr — WARNING on loss spikes,
ERROR on NaN/Inf.

Two users: people call ``tensorsight.setup_logging("training.log")`` in their own code (the lesson's helper, also
re-exported by the toolbox) and get a configured ``logging.Logger``; the measurement feature
(``tensorsight.agent.measurement.pipeline``) writes one line per step to the file named by the ``logFile`` launch
option,
with no code change. Warnings and errors are also published as ``log`` events so the editor shows them.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque

from tensorsight.agent.runtime.events import send
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.core import protocol
from tensorsight.core.curves import SPIKE_FACTOR, SPIKE_WINDOW, is_spike, median

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"
DEFAULT_LOGGER = "tensorsight.training"


def _level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    value = logging.getLevelName(str(level).upper())
    return value if isinstance(value, int) else logging.INFO


def setup_logging(
    log_file: str | os.PathLike[str] | None = "training.log",
    level: int | str = logging.INFO,
    *,
    name: str = DEFAULT_LOGGER,
    console: bool = False,
    fmt: str = LOG_FORMAT,
) -> logging.Logger:
    """Configure and return the logger ``name``: a file handler on ``log_file`` (appending; its folder is created)
    and, with ``console=True``, a stderr handler. Calling it again with the same file adds nothing twice.

    ``level`` is a ``logging`` level or its name (``"DEBUG"``, ``"INFO"``, ...). The logger does not propagate to the
    root logger, so the program's own logging configuration is left as it was.
    """
    logger = logging.getLogger(name)
    logger.setLevel(_level(level))
    logger.propagate = False
    formatter = logging.Formatter(fmt)
    if log_file is not None:
        path = os.path.abspath(os.fspath(log_file))
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        known = [h for h in logger.handlers if isinstance(h, logging.FileHandler) and h.baseFilename == path]
        if not known:
            handler = logging.FileHandler(path, mode="a", encoding="utf-8")
            handler.setFormatter(formatter)
            logger.addHandler(handler)
    if console and not any(type(h) is logging.StreamHandler for h in logger.handlers):
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        logger.addHandler(stream)
    return logger


class TrainingLog:
    """Per-step log lines for the measurement feature; spikes are WARNINGs and non-finite losses ERRORs.

    ``logger`` may be None (no ``logFile``): the warnings and errors are still published as ``log`` events. A spike
    is judged against the recent losses of the same series (one per optimizer: a GAN's generator loss is not a spike
    of the discriminator's), and not at all for a series the caller says is oscillatory by nature (``spikes=False``).
    """

    def __init__(self, logger: logging.Logger | None, spike_factor: float = SPIKE_FACTOR) -> None:
        self.logger = logger
        self.spike_factor = spike_factor
        self._recent_by_series: dict[object, deque[float]] = {}
        self._first_loss_by_series: dict[object, float] = {}

    def _publish(self, level: int, message: str) -> None:
        if self.logger is not None:
            self.logger.log(level, message)
        if level >= logging.WARNING:
            send(protocol.LogEvent(level=logging.getLevelName(level), message=message))

    @never_raise()
    def step(
        self,
        step: int,
        loss: float | None,
        lr: float | None,
        grad_norm: float | None,
        *,
        series: object = None,
        spikes: bool = True,
    ) -> None:
        """Log one optimizer step (of the loss series ``series``: one per optimizer)."""
        recent = self._recent_by_series.setdefault(series, deque(maxlen=SPIKE_WINDOW))
        parts = [f"step {step}"]
        if loss is not None:
            parts.append(f"loss {loss:.6g}")
        if lr is not None:
            parts.append(f"lr {lr:.3g}")
        if grad_norm is not None:
            parts.append(f"grad_norm {grad_norm:.4g}")
        text = " ".join(parts)
        if loss is not None and not math.isfinite(loss):
            self._publish(logging.ERROR, f"{text}: the loss is {loss} (NaN/Inf)")
            return
        if grad_norm is not None and not math.isfinite(grad_norm):
            self._publish(logging.ERROR, f"{text}: the gradient norm is {grad_norm} (NaN/Inf)")
        elif spikes and loss is not None and is_spike(recent, loss, self.spike_factor, self._spike_floor(series)):
            level = median(list(recent))
            self._publish(logging.WARNING, f"{text}: loss spike ({loss / level:.1f}× the recent median {level:.4g})")
        elif self.logger is not None and self.logger.isEnabledFor(logging.INFO):
            self.logger.info(text)
        if loss is not None:
            recent.append(loss)
            self._first_loss_by_series.setdefault(series, abs(loss))

    def _spike_floor(self, series: object) -> float:
        # a jump smaller than 5% of where the run started is noise, however large relative to a near-zero loss
        first = self._first_loss_by_series.get(series)
        return 0.05 * first if first is not None else 0.0

    @never_raise()
    def validation(self, step: int, loss: float) -> None:
        level = logging.ERROR if not math.isfinite(loss) else logging.INFO
        if level == logging.INFO and (self.logger is None or not self.logger.isEnabledFor(level)):
            return
        self._publish(level, f"step {step} val_loss {loss:.6g}")

    @never_raise()
    def close(self) -> None:
        if self.logger is None:
            return
        for handler in list(self.logger.handlers):
            handler.flush()
