"""``source_files.source_lines``: a finding's file is read only when it is a regular file, inside the allowed folders
(symlinks resolved) and small enough; anything else answers None at once (a FIFO never blocks it)."""

from __future__ import annotations

import os
import threading

import pytest

from tensorsight.server.source_files import inside, source_lines


def test_a_regular_file_inside_is_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b"a = 1\nb = '\xff'\n")
    assert source_lines(str(script), [str(tmp_path)]) == ["a = 1\n", "b = '\ufffd'\n"]


def test_outside_the_folders_or_too_big_is_not_read(tmp_path):
    inner, outer = tmp_path / "project", tmp_path / "elsewhere"
    inner.mkdir(), outer.mkdir()
    secret = outer / "secret.py"
    secret.write_text("x = 1\n")
    assert source_lines(str(secret), [str(inner)]) is None
    assert source_lines(str(inner / ".." / "elsewhere" / "secret.py"), [str(inner)]) is None
    (inner / "link.py").symlink_to(secret)
    assert source_lines(str(inner / "link.py"), [str(inner)]) is None  # the link leads outside
    assert source_lines(str(secret), []) is None
    big = inner / "big.py"
    big.write_text("x" * 2000)
    assert source_lines(str(big), [str(inner)], max_bytes=1000) is None
    assert inside(str(inner / "a" / "b.py"), [str(inner)]) and not inside(str(outer), [str(inner)])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")
def test_a_fifo_or_a_device_answers_at_once(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    answers: list[object] = []
    worker = threading.Thread(
        target=lambda: answers.extend(
            source_lines(str(path), [str(tmp_path), "/dev"]) for path in (fifo, tmp_path / "zero.py")
        ),
        daemon=True,
    )
    worker.start()
    worker.join(10)
    assert answers == [None, None]
    assert source_lines("/dev/zero", ["/dev"]) is None
