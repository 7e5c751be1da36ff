"""The viewer's pictures outside the editor: ``tensorsight.show(x)`` in a notebook cell, and PNG files.

Called by users (``tensorsight.show``, exported lazily from ``tensorsight/__init__.py``) and by the doctor, which
writes the picture of the first NaN's tensor next to its report (``save_png``). It draws the payload of
``display/viewer.py`` (so the figures, downsampling and time budget are the viewer's): a heatmap with NaN, +Inf and
-Inf cells in colours of their own, an image grid, or a line plot with the buckets holding NaN/Inf marked, in pure
Python (no numpy needed, whatever the tensor's device), encoded by ``core/png.py``. The object a notebook displays
has ``_repr_png_`` and ``_repr_html_`` (the picture and a caption with the exact counts). Nothing here raises: a
value that cannot be drawn gives a picture-less object whose caption says why.
"""

from __future__ import annotations

import base64
import html
import math
from typing import Any

from tensorsight.agent.display.viewer import DEFAULT_BUDGET_S, EMPTY, FINITE, NAN, NEGINF, POSINF, view
from tensorsight.core.png import encode_png

NAN_COLOUR = (255, 0, 255)  # magenta: no colour of the value scale comes near it
POSINF_COLOUR = (255, 255, 255)
NEGINF_COLOUR = (0, 0, 0)
EMPTY_COLOUR = (128, 128, 128)
MARK_COLOURS = {NAN: NAN_COLOUR, POSINF: POSINF_COLOUR, NEGINF: NEGINF_COLOUR, EMPTY: EMPTY_COLOUR}
# viridis at nine stops (dark blue, through green, to yellow)
SCALE = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
]
MIN_SIDE = 256  # small pictures are enlarged (nearest neighbour) to about this many pixels a side
LINE_HEIGHT = 160
BACKGROUND = (255, 255, 255)
LINE_COLOUR = (31, 119, 180)

Pixel = tuple[int, int, int]


class Picture:
    """What ``tensorsight.show`` returns: a notebook displays it (``_repr_png_``, ``_repr_html_``); ``png`` is the
    PNG file's bytes (None when there is nothing to draw), ``caption`` the figures, ``payload`` the viewer's."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        self.caption = caption(payload)
        try:
            drawn = draw(payload)
            self.png: bytes | None = None if drawn is None else encode_png(*drawn)
        except Exception as error:  # noqa: BLE001 - a guest never lets an error escape into the user's program
            self.png = None
            self.caption += f" (not drawn: {type(error).__name__}: {error})"

    def _repr_png_(self) -> bytes | None:
        return self.png

    def _repr_html_(self) -> str:
        text = f"<div><code>{html.escape(self.caption)}</code></div>"
        if self.png is None:
            return text
        data = base64.b64encode(self.png).decode("ascii")
        return f'{text}<img src="data:image/png;base64,{data}" style="image-rendering: pixelated"/>'

    def __repr__(self) -> str:
        return self.caption

    def save(self, path: str) -> bool:
        """Write the PNG file at ``path``; False (and nothing written) when there is no picture."""
        if self.png is None:
            return False
        with open(path, "wb") as out:
            out.write(self.png)
        return True


def show(
    value: Any, index: tuple[int, ...] = (), normalize: str = "channel", budget_s: float = DEFAULT_BUDGET_S
) -> Picture:
    """The viewer's picture of a tensor or array, for a notebook cell: ``tensorsight.show(x)``."""
    return Picture(view(value, index=index, normalize=normalize, budget_s=budget_s))


def save_png(value: Any, path: str, budget_s: float = DEFAULT_BUDGET_S) -> bool:
    """Write the viewer's picture of ``value`` as a PNG file at ``path``; False when there is nothing to draw."""
    return Picture(view(value, budget_s=budget_s)).save(path)


def caption(payload: dict[str, Any]) -> str:
    meta = payload.get("meta") or {}
    head = f"{meta.get('dtype', '?')}{meta.get('shape', '')} {meta.get('device', '')}".strip()
    if "counts" not in payload:
        return f"{head}: {payload.get('message', '')}".strip()
    counts, stats = payload["counts"], payload["stats"]
    parts = [head]
    bad = [f"{name}×{counts[key]}" for key, name in (("nan", "NaN"), ("posinf", "+Inf"), ("neginf", "-Inf"))]
    parts.append(
        " ".join(b for b, key in zip(bad, ("nan", "posinf", "neginf"), strict=True) if counts[key]) or "finite"
    )
    parts.append(f"zeros×{counts['zero']}")
    for key, name in (("min", "min"), ("max", "max"), ("mean", "μ"), ("std", "σ")):
        if stats.get(key) is not None:
            parts.append(f"{name}={stats[key]:.4g}")
    if payload.get("partial"):
        parts.append(f"partial: {payload.get('partialReason')}")
    return " · ".join(parts)


def draw(payload: dict[str, Any]) -> tuple[int, int, list[bytes]] | None:
    """(width, height, RGB rows) of the payload's picture, or None for a scalar or a message."""
    kind = payload.get("kind")
    if kind == "heatmap":
        return _grid(_heatmap_pixels(payload["heatmap"]))
    if kind == "image":
        return _grid(_image_grid(payload["image"]))
    if kind == "line":
        return _line(payload["line"])
    return None


def _colour(t: float) -> Pixel:
    t = min(max(t, 0.0), 1.0) * (len(SCALE) - 1)
    i = min(int(t), len(SCALE) - 2)
    f = t - i
    a, b = SCALE[i], SCALE[i + 1]
    return (round(a[0] + (b[0] - a[0]) * f), round(a[1] + (b[1] - a[1]) * f), round(a[2] + (b[2] - a[2]) * f))


def _heatmap_pixels(heat: dict[str, Any]) -> list[list[Pixel]]:
    finite = [v for row in heat["values"] for v in row if v is not None]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = high - low or 1.0
    return [
        [
            _colour((v - low) / span) if m == FINITE and v is not None else MARK_COLOURS.get(m, EMPTY_COLOUR)
            for v, m in zip(values, marks, strict=True)
        ]
        for values, marks in zip(heat["values"], heat["marks"], strict=True)
    ]


def _image_pixels(image: dict[str, Any]) -> list[list[Pixel]]:
    channels = image["channels"][:3]
    first = channels[0]
    out = []
    for r in range(first["rows"]):
        row = []
        for c in range(first["cols"]):
            marks = [ch["marks"][r][c] for ch in channels]
            worst = next((m for m in (NAN, POSINF, NEGINF) if m in marks), FINITE)
            if worst != FINITE:
                row.append(MARK_COLOURS[worst])
                continue
            levels = []
            for ch in channels:
                v = ch["values"][r][c]
                span = (ch["high"] - ch["low"]) or 1.0
                levels.append(0 if v is None else round(255 * min(max((v - ch["low"]) / span, 0.0), 1.0)))
            row.append((levels[0], levels[0], levels[0]) if len(levels) < 3 else (levels[0], levels[1], levels[2]))
        out.append(row)
    return out


def _image_grid(images: dict[str, Any]) -> list[list[Pixel]]:
    tiles = [_image_pixels(image) for image in images["images"]]
    if not tiles:
        return [[EMPTY_COLOUR]]
    across = math.ceil(math.sqrt(len(tiles)))
    down = math.ceil(len(tiles) / across)
    h, w, gap = len(tiles[0]), len(tiles[0][0]), 2
    canvas = [[BACKGROUND] * (across * (w + gap) - gap) for _ in range(down * (h + gap) - gap)]
    for i, tile in enumerate(tiles):
        top, left = (i // across) * (h + gap), (i % across) * (w + gap)
        for r, row in enumerate(tile[:h]):
            canvas[top + r][left : left + len(row[:w])] = row[:w]
    return canvas


def _grid(cells: list[list[Pixel]]) -> tuple[int, int, list[bytes]]:
    """Cells enlarged to about MIN_SIDE pixels a side (each cell a square of pixels), as RGB rows."""
    rows, cols = len(cells), len(cells[0])
    scale = max(1, MIN_SIDE // max(rows, cols))
    lines = []
    for row in cells:
        line = bytes(channel for pixel in row for _ in range(scale) for channel in pixel)
        lines.extend([line] * scale)
    return cols * scale, rows * scale, lines


def _line(line: dict[str, Any]) -> tuple[int, int, list[bytes]]:
    """One column per bucket: its min-max segment, or the full height in the mark's colour for NaN/Inf."""
    lows, highs, marks = line["min"], line["max"], line["marks"]
    finite = [v for v in lows + highs if v is not None]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = high - low or 1.0
    scale = max(1, MIN_SIDE // max(1, len(marks)))
    width, height = len(marks) * scale, LINE_HEIGHT
    canvas = [[BACKGROUND] * width for _ in range(height)]

    def y(v: float) -> int:
        return height - 1 - round((v - low) / span * (height - 1))

    for i, mark in enumerate(marks):
        columns = range(i * scale, (i + 1) * scale)
        if mark != FINITE:
            top, bottom, colour = 0, height - 1, MARK_COLOURS.get(mark, EMPTY_COLOUR)
        elif lows[i] is None or highs[i] is None:
            continue
        else:
            top, bottom, colour = y(highs[i]), y(lows[i]), LINE_COLOUR
        for r in range(top, bottom + 1):
            for c in columns:
                canvas[r][c] = colour
    return width, height, [bytes(channel for pixel in row for channel in pixel) for row in canvas]
