"""`replaced`: a library function swapped where it lives and where the learner imported it, then restored."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest

from course.grading.observe.calls.patching import replaced


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


def test_builds_per_call_accepts_a_jit_held_anywhere_or_built_lazily(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """A jit in a dict, in an object, from a factory, or built by the first call of each key is built once;
    one built by every call is not, and the message counts what it saw."""
    import jax.numpy as jnp

    from course.grading import jit_builds_per_call

    module = learner_module("""
        import functools
        import jax

        _table = {"double": jax.jit(lambda x: x * 2)}

        class Holder:
            def __init__(self):
                self.fn = jax.jit(lambda x: x * 2)

        _holder = Holder()
        _lazy = {}

        def in_dict(x):
            return _table["double"](x)

        def in_object(x):
            return _holder.fn(x)

        @functools.lru_cache
        def _for(shape):
            return jax.jit(lambda x: x * 2)

        def per_shape(x):
            return _for(x.shape)(x)

        def per_call(x):
            return jax.jit(lambda v: v * 2)(x)
    """)
    from jax._src import pjit

    hook = pjit.make_jit
    path = Path(module.__file__)
    same = [(jnp.ones(3),), (jnp.ones(3),), (jnp.ones(4),), (jnp.ones(3),)]
    lazily = jit_builds_per_call(module.per_shape, same, path=path)
    assert lazily.builds == (1, 0, 1, 0) and lazily.keys[0] == "float32[3]" and lazily.message("f") is None
    for fn in (module.in_dict, module.in_object):
        builds = jit_builds_per_call(fn, same, path=path)
        assert builds.builds == (0, 0, 0, 0) and builds.message(fn.__name__) is None, fn.__name__
    every = jit_builds_per_call(module.per_call, same, path=path)
    assert every.repeats() == [1, 3]
    assert str(every.message("per_call")).startswith(
        "each of 3 calls of `per_call` with float32[3] built a new jitted wrapper (3 in all)")
    with_keys = jit_builds_per_call(module.per_call, same[:2], keys=["bucket 16", "bucket 16"], path=path)
    assert "with bucket 16" in str(with_keys.message("f"))
    assert pjit.make_jit is hook  # the counting hook is gone after the calls


def test_builds_message_names_only_the_calls_that_repeat() -> None:
    """Builds on some repeated calls only: the message counts them and says which calls they were."""
    from course.grading import JitBuilds

    builds = JitBuilds((1, 0, 1), ("32 rows", "32 rows", "32 rows"))
    assert builds.repeats() == [2]
    assert str(builds.message("f")).startswith(
        "3 calls of `f` with 32 rows built 2 jitted wrappers, again on call(s) 3 after an earlier call with "
        "32 rows had built one")
    assert JitBuilds((1, 1), ("a", "b")).message("f") is None
