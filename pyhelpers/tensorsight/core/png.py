"""A minimal PNG encoder (8-bit RGB, stdlib ``zlib`` and ``struct`` only): the file format of the viewer's pictures.

Called by ``agent/display/picture.py`` (``tensorsight.show`` in a notebook, and the doctor's first-NaN picture).
Pure function, no I/O; no third-party dependency (the agent runs on the stdlib in the user's process).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def encode_png(width: int, height: int, rows: Iterable[bytes]) -> bytes:
    """The PNG file of an RGB image: ``rows`` are ``height`` rows of ``3 * width`` bytes each (R, G, B)."""
    raw = bytearray()
    count = 0
    for row in rows:
        if len(row) != 3 * width:
            raise ValueError(f"a row of {len(row)} bytes in an image {width} pixels wide")
        raw += b"\x00"  # filter type 0 (none) per row
        raw += row
        count += 1
    if count != height:
        raise ValueError(f"{count} rows for an image {height} pixels high")
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit depth, colour type 2 (RGB)
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(bytes(raw), 6)) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
