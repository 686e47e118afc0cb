"""`replaced`: a library function swapped where it lives and where the learner imported it, then restored."""

from __future__ import annotations

import types

import pytest

from course.grading.patching import replaced


def _fake_library() -> types.SimpleNamespace:
    """An object standing in for a module such as `jax`."""
    return types.SimpleNamespace(jit=lambda f: f)


def test_both_spellings_replaced_and_restored() -> None:
    """`lib.jit` and a learner's `from lib import jit` both see the replacement, and both come back."""
    lib = _fake_library()
    original = lib.jit
    learner = {"jit": original, "other": len}
    with replaced(lib, "jit", "counting", learner) as seen:
        assert seen is original
        assert lib.jit == "counting" and learner["jit"] == "counting" and learner["other"] is len
    assert lib.jit is original and learner["jit"] is original


def test_restored_after_an_exception() -> None:
    """An exception inside the block still restores every name."""
    lib = _fake_library()
    original = lib.jit
    learner = {"jit": original}
    with pytest.raises(RuntimeError), replaced(lib, "jit", "counting", learner):
        raise RuntimeError("boom")
    assert lib.jit is original and learner["jit"] is original
