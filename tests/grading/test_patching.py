"""`replaced`: a library function swapped where it lives and where the learner imported it, then restored."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

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


def test_count_jit_builds_counts_the_learners_however_spelled(
    tmp_path: Path, learner_module: Callable[[str], types.ModuleType],
) -> None:
    """Builds from a file count whether by `jax.jit`, a partial of it or the decorator factory;
    the wrappers JAX builds for eager operations do not."""
    import jax
    import jax.numpy as jnp

    from course.grading import count_jit_builds

    module = learner_module(
        "import functools, jax\n"
        "_jit = functools.partial(jax.jit, donate_argnums=0)\n"
        "def build(f):\n"
        "    jax.jit(f)\n"
        "    _jit(f)\n"
        "    jax.jit(static_argnums=())(f)\n"
    )
    learner = Path(module.__file__)
    with count_jit_builds(learner) as built:
        module.build(lambda x: x)
        jnp.arange(3.0) * 2.5 + jnp.ones(3)  # eager work: JAX builds its own wrappers
    assert built == [3]
    with count_jit_builds(tmp_path / "other.py") as elsewhere:
        module.build(lambda x: x)
    assert elsewhere == [0]
    with count_jit_builds() as anywhere:
        jax.jit(lambda x: x)
    assert anywhere == [1]
