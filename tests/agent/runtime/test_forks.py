"""What a forked child undoes at once (agent/runtime/forks.py): a registered callback runs in every child forked
afterwards, in the forking thread, once per fork however often it was registered, and never in the parent."""

import os

import pytest

from tensorsight.agent.runtime import forks

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def test_a_callback_runs_once_in_each_forked_child_and_never_in_the_parent():
    calls: list[int] = []

    def note_child() -> None:
        calls.append(os.getpid())

    forks.in_forked_children(note_child)
    forks.in_forked_children(note_child)  # registered twice: still one call per fork
    assert sum(1 for known in forks._registered if known is note_child) == 1
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child reports how often the callback ran there, and in which process
        os.close(read)
        os.write(write, f"{len(calls)} {int(calls == [os.getpid()])}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        assert answer.read() == "1 1"
    os.waitpid(child, 0)
    assert calls == []  # the parent ran nothing
