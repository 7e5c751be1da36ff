"""The static analysis's own process: the rules and the training loops of one open document at a time, off the
language server's interpreter.

``analysis_process.AnalysisProcess`` (in the server) starts it as ``python -I -c ...`` with the server's own
``sys.path`` and sends it one request at a time over stdin: an 8-byte big-endian length, then a pickle of
``(source, path, buffers, folders, roots)``; it answers on stdout in the same framing with ``(ProjectResult, loops,
rss)``, or ``(None, None, rss, error text)`` when the analysis failed. Parsing a large file holds the GIL for
seconds in one C call, and its syntax trees cost hundreds of MiB that a long-lived process does not give back; here
neither touches the server, which answers hover, completion and diagnostics meanwhile and recycles this process
when it grows (``rss``). Reads of project files happen here, under ``source_files``' rules; anything written to
stdout by accident goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any, BinaryIO

HEADER = struct.Struct(">Q")


def read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    return data if len(data) == size else None


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()


def resident_bytes() -> int | None:
    """This process's resident memory (Linux), or None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def answer(request: Any) -> tuple[Any, ...]:
    from tensorsight.server.diagnostics import analyze_document, loops_of
    from tensorsight.server.runtime_view import normalize_path
    from tensorsight.server.source_files import project_reader

    source, path, buffers, folders, roots = request
    read = project_reader(buffers, folders, normalize_path)
    result = analyze_document(source, path, read, roots)
    return result, loops_of(source), resident_bytes()


def main() -> None:
    import tensorsight.server.diagnostics  # noqa: F401 - the rules' imports happen now, before the first request

    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the answers
    while True:
        frame = read_frame(requests)
        if frame is None:
            return  # the server closed our stdin: it is shutting down or recycling us
        try:
            reply: tuple[Any, ...] = answer(pickle.loads(frame))
        except Exception as exc:  # noqa: BLE001 - reported to the server, which logs it
            reply = (None, None, resident_bytes(), f"{type(exc).__name__}: {exc}")
        write_frame(answers, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    main()
