"""``agent.runtime.procfs``: /proc files read through kept descriptors, one per process (or thread), none for a file
that is missing."""

from __future__ import annotations

import os
import threading

import pytest

from tensorsight.agent.runtime import procfs

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")


def test_a_file_is_opened_once_per_process_and_per_thread_when_asked():
    first = procfs.read_kept("/proc/self/statm")
    assert first is not None and len(first.split()) >= 2
    opened = dict(procfs._descriptors)
    assert procfs.read_kept("/proc/self/statm") is not None and procfs._descriptors == opened  # the same descriptor
    elsewhere: list[bytes | None] = []
    thread = threading.Thread(target=lambda: elsewhere.append(procfs.read_kept("/proc/thread-self/stat", True)))
    thread.start()
    thread.join()
    mine = procfs.read_kept("/proc/thread-self/stat", per_thread=True)
    assert elsewhere[0] is not None and mine is not None and elsewhere[0].split()[0] != mine.split()[0]  # thread ids


def test_a_missing_file_reads_as_none_and_is_not_opened_again():
    assert procfs.read_kept("/proc/self/no-such-file") is None
    assert procfs._descriptors[("/proc/self/no-such-file", os.getpid(), 0)] is None
    assert procfs.read_kept("/proc/self/no-such-file") is None
