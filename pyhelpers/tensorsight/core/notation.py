"""How TensorSight writes a dtype, a shape and a byte size: one spelling for every place the user reads them.

The Variables line and hovers (``core.summary`` via ``agent.display``), the ``shape`` events behind inlay hints
(``agent.shapes.observers``), the shape map (``agent.shapes.shape_map``, ``core.shapes.format_shape_table``, the
``shapes`` command and the doctor), shape-error explanations and memory reports all format through these functions,
so one tensor reads ``f32[64, 16]`` everywhere.

Dtype short names follow one rule, written out as a table so that each name is checked: the family word is
abbreviated (``bfloat``/``float`` -> ``bf``/``f``, ``complex`` -> ``c``, ``uint`` -> ``u``, ``int`` -> ``i``, also
inside ``qint``/``quint``) and the rest of torch's or numpy's name is kept, so no two dtypes share a short name
(``f8_e4m3fn`` and ``f8_e4m3fnuz`` stay apart). A name the table does not know is shown whole: never a guess.

Pure and stdlib only: dtypes arrive as objects (``torch.float32``, ``numpy.dtype('float32')``) or names, read
through ``str()`` and a numpy dtype's plain attributes (``names``, ``kind``, ``itemsize``), never through an import.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Every dtype of torch 2.x and numpy 2.x by its canonical name (``str(torch.x)`` without "torch.", ``np.dtype.name``).
DTYPE_SHORT_NAMES: dict[str, str] = {
    # floating point
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "float128": "f128",  # numpy longdouble on x86-64 Linux
    "float96": "f96",  # numpy longdouble on 32-bit x86
    "float8_e4m3fn": "f8_e4m3fn",
    "float8_e4m3fnuz": "f8_e4m3fnuz",
    "float8_e5m2": "f8_e5m2",
    "float8_e5m2fnuz": "f8_e5m2fnuz",
    "float8_e8m0fnu": "f8_e8m0fnu",
    "float4_e2m1fn_x2": "f4_e2m1fn_x2",  # two 4-bit values packed per byte
    # complex
    "complex32": "c32",
    "complex64": "c64",
    "complex128": "c128",
    "complex192": "c192",
    "complex256": "c256",
    # signed and unsigned integers, including torch's sub-byte ones
    **{f"int{bits}": f"i{bits}" for bits in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64)},
    **{f"uint{bits}": f"u{bits}" for bits in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64)},
    # quantized (torch)
    "qint8": "qi8",
    "quint8": "qu8",
    "qint32": "qi32",
    "quint4x2": "qu4x2",
    "quint2x4": "qu2x4",
    # named as they are: already short, or no abbreviation would be clearer
    "bool": "bool",
    "bits1x8": "bits1x8",
    "bits2x4": "bits2x4",
    "bits4x2": "bits4x2",
    "bits8": "bits8",
    "bits16": "bits16",
    "object": "object",
    "void": "void",
    "datetime64": "datetime64",
    "timedelta64": "timedelta64",
}

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
SHAPE_WIDTH = 40  # characters; a longer shape keeps its first and last dimensions


def dtype_name(dtype: Any) -> str:
    """The full name: ``torch.float32`` / ``np.dtype('float32')`` / ``"float32"`` -> ``"float32"``.

    This is what ``shape`` events and shape-map rows carry in their ``dtype`` field.
    """
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and not str(dtype).startswith("torch."):
        return name  # a numpy dtype: ``name`` is the canonical spelling (``str()`` of a struct dtype is its layout)
    text = str(dtype)
    return text[6:] if text.startswith("torch.") else text


def short_dtype(dtype: Any) -> str:
    """The short name shown before a shape: ``f32``, ``bf16``, ``i64``, ``qi8``, ``f8_e5m2``, ``c64``, ``bool``.

    numpy's flexible dtypes say their size or fields: ``str8`` (characters), ``bytes16``, ``struct(x, y)``.
    """
    fields = getattr(dtype, "names", None)
    if fields:
        shown = ", ".join(str(f) for f in fields[:4])
        return f"struct({shown}{', …' if len(fields) > 4 else ''})"
    kind = getattr(dtype, "kind", None)
    itemsize = getattr(dtype, "itemsize", None)
    if isinstance(kind, str) and isinstance(itemsize, int):
        if kind == "U":
            return f"str{itemsize // 4}"  # numpy stores 4 bytes per character
        if kind == "S":
            return f"bytes{itemsize}"
        if kind == "T":
            return "str"  # numpy 2's variable-length StringDType
    name = dtype_name(dtype)
    return DTYPE_SHORT_NAMES.get(name, name)


def format_shape(shape: Iterable[int] | None, width: int = SHAPE_WIDTH) -> str:
    """``[64, 16]``, ``[]`` for a scalar; a shape longer than ``width`` keeps its ends: ``[2, 3, …(30)…, 38, 39]``."""
    if shape is None:
        return "[?]"
    dims = [str(int(d)) for d in shape]
    text = "[" + ", ".join(dims) + "]"
    if len(text) <= width or len(dims) <= 6:
        return text
    return "[" + ", ".join([*dims[:3], f"…({len(dims) - 5})…", *dims[-2:]]) + "]"


def shape_text(shape: Iterable[int] | None, dtype: Any = None) -> str:
    """A tensor's type at a glance: ``(64, 16), torch.float32`` -> ``f32[64, 16]``; without a dtype ``[64, 16]``."""
    prefix = "" if dtype is None or (isinstance(dtype, str) and not dtype) else short_dtype(dtype)
    return prefix + format_shape(shape)


def format_bytes(count: float | None) -> str:
    """``512 B``, ``1.5 KiB``, ``381.5 MiB``, ``3.0 GiB``; ``?`` when unknown (binary units, one decimal)."""
    if count is None:
        return "?"
    value = float(count)
    for unit in _BYTE_UNITS:
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{round(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable: the last unit always returns")  # pragma: no cover


__all__ = [
    "DTYPE_SHORT_NAMES",
    "SHAPE_WIDTH",
    "dtype_name",
    "format_bytes",
    "format_shape",
    "shape_text",
    "short_dtype",
]
