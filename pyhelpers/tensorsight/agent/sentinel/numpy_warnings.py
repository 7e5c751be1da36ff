"""numpy's floating-point warnings from the user's code ("divide by zero encountered in log" at the line that ran
``np.log``): where a NaN/Inf that later comes in with the data was most likely made.

The sentinel reports a tensor built from a numpy array that already holds NaN/Inf (``torch.from_numpy``,
``torch.as_tensor``, a model input loaded that way) as data that came in (``outside``, ``boundaries``). numpy made
those values, and the sentinel does not watch numpy; but numpy says where it made them, in a ``RuntimeWarning``
shown at the user's line. This module notes those warnings as they are shown, so the report can name the line that
made the values (the line to fix), not only the line that converted them.

How it listens: ``warnings._showwarnmsg`` (what ``warnings.warn`` and C code such as numpy's ufuncs call to show a
warning that passed the filters) is replaced by a wrapper that calls the original first, then notes the warning.
The program sees the same warnings at the same locations, with the same filters and once-per-location
deduplication; ``showwarning`` and ``catch_warnings`` are left alone. A warning the filters ignore (or an
``np.errstate`` that silences it) is not seen: the report then names the conversion only.

Installed by ``tensorsight.agent.sentinel`` when the sentinel is armed; read through ``origin`` by ``outside`` and
``boundaries`` when they report a NaN/Inf that came in with the data.
"""

from __future__ import annotations

import os
import re
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.core.l10n import t
from tensorsight.core.nonfinite import NonFiniteCounts

MAX_KEPT = 16  # warnings noted per process (the first ones: an origin comes before what it feeds)
_NUMPY_FLOAT_ERROR = re.compile(r"^(divide by zero|invalid value|overflow) encountered in (\w+)")


@dataclass(frozen=True)
class FloatWarning:
    """One numpy floating-point warning shown at a user's line, and the values such an error makes."""

    file: str
    line: int
    text: str  # numpy's words: "divide by zero encountered in log"
    makes_nan: bool  # an invalid value makes NaN; a division by zero or an overflow makes ±Inf


@dataclass(frozen=True)
class Origin:
    """Where a NaN/Inf that came in with the data was made, as numpy said: the first fitting warning's line, and the
    words to add to the report."""

    file: str
    line: int
    text: str


_seen: list[FloatWarning] = []
_installed: list[bool] = [False]


def install() -> None:
    """Listen for shown warnings from now on (once per process)."""
    if _installed[0]:
        return
    original = getattr(warnings, "_showwarnmsg", None)
    if not callable(original):
        return
    _installed[0] = True
    warnings._showwarnmsg = _listening(original)  # type: ignore[attr-defined]


def _listening(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    note = untraced_hook(_note)

    def showing(message: Any) -> Any:
        result = original(message)
        note(message)
        return result

    return showing


@never_raise()
def _note(message: Any) -> None:
    if len(_seen) >= MAX_KEPT or not issubclass(getattr(message, "category", type(None)), RuntimeWarning):
        return
    text = str(getattr(message, "message", ""))
    matched = _NUMPY_FLOAT_ERROR.match(text)
    file, line = getattr(message, "filename", ""), getattr(message, "lineno", 0)
    if matched is None or not isinstance(line, int) or not is_user_file(file):
        return
    _seen.append(FloatWarning(os.path.abspath(file), line, text, matched.group(1) == "invalid value"))


def origin(counts: NonFiniteCounts) -> Origin | None:
    """The line numpy warned at that can have made the values of ``counts`` (NaN from an invalid value, ±Inf from a
    division by zero or an overflow), the first such warning; None when none was shown.

    NaN that arithmetic made from an earlier ±Inf (``np.log(0)`` standardized: ``-inf - mean`` with a mean that is
    ``-inf`` too) goes back to the line that made the Inf: an invalid value in arithmetic (subtract, divide...) that
    follows a division by zero or an overflow is reported at that earlier line, naming both."""
    fitting = [w for w in _seen if (w.makes_nan and counts.nan) or (not w.makes_nan and counts.posinf + counts.neginf)]
    if not fitting:
        return None
    first = fitting[0]
    made_inf = _inf_before(first) if first.makes_nan else None
    if made_inf is not None:
        text = t(
            '; numpy warned "{0}" at {1}:{2}, which makes ±Inf, and "{3}" at {4}:{5}, where arithmetic on them '
            "makes NaN",
            made_inf.text,
            os.path.basename(made_inf.file),
            made_inf.line,
            first.text,
            os.path.basename(first.file),
            first.line,
        )
        return Origin(made_inf.file, made_inf.line, text)
    text = t(
        '; numpy warned "{0}" at {1}:{2}, which makes such values',
        first.text,
        os.path.basename(first.file),
        first.line,
    )
    others = [f"{os.path.basename(w.file)}:{w.line}" for w in fitting[1:4]]
    if others:
        text += t(" (and at {0})", ", ".join(others))
    return Origin(first.file, first.line, text)


_ARITHMETIC = frozenset({"add", "subtract", "multiply", "divide", "true_divide", "reduce", "scalar"})


def _inf_before(invalid: FloatWarning) -> FloatWarning | None:
    """The first ±Inf-making warning shown before ``invalid`` when ``invalid`` is arithmetic (what turns Inf into
    NaN: ``inf - inf``, ``0 * inf``, ``inf / inf``, a reduction over them), else None."""
    matched = _NUMPY_FLOAT_ERROR.match(invalid.text)
    if matched is None or matched.group(2) not in _ARITHMETIC:
        return None
    for warning in _seen:
        if warning is invalid:
            return None
        if not warning.makes_nan:
            return warning
    return None


def with_origin(what: str, counts: NonFiniteCounts, frame: types.FrameType | None) -> tuple[str, dict[str, Any]]:
    """A report of data that came in, placed at numpy's line when numpy warned of making such values: the text with
    that line named, and the record's place (``file``, ``line``, and ``details.converted_at``: the line that built the
    tensor, where the debugger stops). Unchanged, with no place, when numpy said nothing fitting."""
    found = origin(counts)
    if found is None:
        return what, {}
    where: dict[str, Any] = {"file": found.file, "line": found.line}
    if frame is None:
        return what + found.text, where
    converted = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    where["details"] = {"converted_at": converted}
    return what + found.text + t("; the tensor was built at {0}", converted), where


def forget() -> None:
    """Drop what was noted (tests; a re-armed sentinel keeps it: the data was made once)."""
    _seen.clear()
