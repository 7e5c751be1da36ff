"""``agent.runtime.user_code``: which files are the user's, and the user's frame on the stack."""

from __future__ import annotations

import json
import os
import sys

import torch

from tensorsight.agent.runtime import user_code
from tensorsight.agent.runtime.user_code import is_user_file, user_frame, user_location


def test_a_script_of_the_user_is_user_code(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("x = 1\n")
    assert is_user_file(str(script))
    assert is_user_file(__file__)  # tests are nobody's library


def test_ours_the_libraries_and_the_stdlib_are_not_user_code():
    assert not is_user_file(user_code.__file__)
    assert not is_user_file(os.path.join(user_code.PACKAGE_ROOT, "core", "anything.py"))
    assert not is_user_file(torch.__file__)
    assert not is_user_file(json.__file__)
    assert not is_user_file(os.path.join(os.sep, "opt", "env", "site-packages", "pkg", "mod.py"))
    assert not is_user_file(os.path.join(os.sep, "x", "debugpy", "server", "api.py"))


def test_pseudo_files_are_not_user_code():
    for name in ("", "<string>", "<frozen importlib._bootstrap>", "<stdin>"):
        assert not is_user_file(name)


def test_the_package_root_is_the_tensorsight_folder():
    assert os.path.basename(user_code.PACKAGE_ROOT) == "tensorsight"
    assert os.path.isfile(os.path.join(user_code.PACKAGE_ROOT, "__init__.py"))


def test_user_frame_defaults_to_the_caller():
    frame = user_frame()
    assert frame is sys._getframe()


def test_user_frame_walks_out_of_library_frames_to_the_user():
    seen = {}

    def object_hook(obj):
        caller = sys._getframe(1)  # json's decoder, a stdlib frame
        seen["caller_file"] = caller.f_code.co_filename
        seen["frame"] = user_frame(caller)
        seen["location"] = user_location(caller)
        return obj

    line = sys._getframe().f_lineno + 1
    json.loads('{"a": 1}', object_hook=object_hook)
    assert not is_user_file(seen["caller_file"])
    assert seen["frame"].f_code.co_name == "test_user_frame_walks_out_of_library_frames_to_the_user"
    assert seen["location"] == (os.path.abspath(__file__), line)


def test_no_user_frame_on_a_stack_without_user_code():
    def outermost(frame):
        while frame.f_back is not None:
            frame = frame.f_back
        return frame

    # pytest's own entry frame: only library code from there outwards
    top = outermost(sys._getframe())
    assert not is_user_file(top.f_code.co_filename)
    assert user_frame(top) is None
    assert user_location(top) is None
