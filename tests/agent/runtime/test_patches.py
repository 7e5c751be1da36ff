"""agent.runtime.patches: one wrapper per feature and function, shared by the names that hold it, put back exactly."""

import types

import pytest

from tensorsight.agent.runtime.patches import Patches

pytestmark = pytest.mark.numpy_only


def library() -> tuple[types.SimpleNamespace, types.SimpleNamespace]:
    def clip(x: float) -> float:
        """Clip x."""
        return min(x, 1.0)

    return types.SimpleNamespace(clip=clip), types.SimpleNamespace(clip=clip)  # a function and its re-export


def counting(calls: list[str], label: str):
    def make(original):
        def wrapper(*args, **kwargs):
            calls.append(label)
            return original(*args, **kwargs)

        return wrapper

    return make


def test_both_names_lead_to_one_wrapper_that_keeps_the_function_and_comes_off():
    module, reexport = library()
    original = module.clip
    calls: list[str] = []
    patches = Patches("probe")
    wrapper = patches.replace((module, reexport), "clip", counting(calls, "probe"))
    assert module.clip is wrapper and reexport.clip is wrapper and patches
    assert wrapper.__wrapped__ is original and wrapper.__name__ == "clip" and wrapper.__doc__ == "Clip x."
    assert module.clip(3.0) == 1.0 and reexport.clip(0.5) == 0.5 and calls == ["probe", "probe"]
    assert patches.replace((module, reexport), "clip", counting(calls, "again")) is None  # once per feature
    patches.restore()
    assert module.clip is original and reexport.clip is original and not patches


def test_features_stack_without_mistaking_each_others_marks():
    """functools.wraps copies the first wrapper's mark onto the second: each feature still wraps once, by its own
    mark, and a feature put back under another's wrapper leaves that wrapper in place."""
    module, _ = library()
    original = module.clip
    calls: list[str] = []
    first, second = Patches("first"), Patches("second")
    first.replace(module, "clip", counting(calls, "first"))
    on_top = second.replace(module, "clip", counting(calls, "second"))
    assert on_top is not None and getattr(on_top, first.mark)  # the copied mark...
    assert second.replace(module, "clip", counting(calls, "twice")) is None  # ...does not confuse the second
    module.clip(2.0)
    assert calls == ["second", "first"]
    first.restore()
    assert module.clip is on_top  # someone else's wrapper on top stays
    second.restore()
    assert module.clip is not original  # the first wrapper is still under it: the second put back what it found
    assert module.clip.__wrapped__ is original


def test_a_missing_function_is_left_alone():
    patches = Patches("probe")
    assert patches.replace(types.SimpleNamespace(), "absent", lambda original: original) is None and not patches
