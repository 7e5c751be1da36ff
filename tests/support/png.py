"""Decoding the PNG files TensorSight writes (core/png.py: 8-bit RGB, filter 0) with zlib only, for the tests of the
viewer's pictures (``tensorsight.show``, the doctor's ``--png``)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from tensorsight.agent.display.picture import NAN_COLOUR


def decode_png(data: bytes) -> np.ndarray:
    """RGB pixels of a PNG written by core/png.py (8-bit RGB, filter 0), decoded with zlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
            assert body[8:10] == b"\x08\x02"
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(height, width, 3)


def nan_pixels(pixels: np.ndarray) -> np.ndarray:
    """Where a picture shows the NaN colour."""
    return (pixels == np.array(NAN_COLOUR, dtype=np.uint8)).all(-1)
