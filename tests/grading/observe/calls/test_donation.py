"""Tests of `observe.calls.donation`: consumed inputs, jitted functions, aliasing, warnings."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed
from course.grading.observe.calls.donation import (
    alias_bytes,
    assert_consumed,
    assert_not_consumed,
    call_recording_warnings,
    donation_info,
    is_consumed,
    is_deleted_error,
    jit_calls,
    jitted_functions,
)

SPEC = jax.ShapeDtypeStruct((8,), jnp.float32)


def _arr(n: int = 8) -> jax.Array:
    """A fresh float32 array in its own buffer."""
    return jax.device_put(np.arange(n, dtype=np.float32))


def test_donated_input_is_consumed_and_other_is_not() -> None:
    """Only the donated argument is deleted by the call."""
    state, delta = _arr(), _arr()
    jax.jit(lambda s, d: s + d, donate_argnums=(0,))(state, delta)
    assert is_consumed(state) and not is_consumed(delta)
    assert_consumed(state, "state")
    assert_not_consumed(delta, "delta")
    with pytest.raises(CheckFailed, match="`delta` was consumed"):
        assert_not_consumed(state, "delta")


def test_undonated_input_fails_assert_consumed() -> None:
    """Without donation the input survives and the message says it was not donated."""
    state = _arr()
    jax.jit(lambda s: s + 1)(state)
    with pytest.raises(CheckFailed, match="`state` is still alive after the call"):
        assert_consumed(state, "state")


def test_non_arrays_are_never_consumed() -> None:
    """NumPy arrays and Python values are not consumed by anything."""
    assert not is_consumed(np.ones(3))
    assert not is_consumed([1.0])


def test_deleted_errors_are_recognised() -> None:
    """Reading a donated array, or passing it again, raises errors that are recognised."""
    f = jax.jit(lambda s: s * 2, donate_argnums=(0,))
    x = _arr()
    f(x)
    with pytest.raises(RuntimeError) as read:
        np.asarray(x)
    with pytest.raises(ValueError) as again:
        f(x)
    assert is_deleted_error(read.value) and is_deleted_error(again.value)
    assert not is_deleted_error(RuntimeError("something else"))


def test_jitted_functions_finds_every_style() -> None:
    """Assignment, decorator and functools.partial decorator are found; plain functions are not."""
    module = types.ModuleType("learner")

    @functools.partial(jax.jit, donate_argnums=(0,))
    def deco(s, d):
        """Decorated with partial(jax.jit, ...)."""
        return s + d

    module.deco = deco
    module.assigned = jax.jit(jnp.add, donate_argnums=0)
    module.bare = jax.jit(lambda s: s)
    module.plain = lambda s: s
    module.np = np
    assert list(jitted_functions(module)) == ["deco", "assigned", "bare"]


def test_alias_bytes_measures_real_reuse() -> None:
    """Same-dtype output reuses the buffer; float16 output and no donation reuse nothing."""
    assert alias_bytes(jax.jit(lambda s: s * 2, donate_argnums=(0,)), SPEC) == 32
    assert alias_bytes(jax.jit(lambda s: (s * 2).astype(jnp.float16), donate_argnums=(0,)), SPEC) == 0
    assert alias_bytes(jax.jit(lambda s: s * 2), SPEC) == 0
    x = _arr()
    assert alias_bytes(jax.jit(lambda s: s - 1, donate_argnums=(0,)), x) == 32
    assert not x.is_deleted()  # lowering with a real array does not consume it


def test_donation_info_reports_request_and_outcome() -> None:
    """The requested argnums, the real alias bytes and the output's dtype."""
    info = donation_info(jax.jit(lambda s, d: (s + d).astype(jnp.float16), donate_argnums=(0,)), SPEC, SPEC)
    assert info.donate_argnums == (0,)
    assert info.alias_bytes == 0
    assert info.out_info.dtype == jnp.float16


def test_not_usable_warning_is_recorded() -> None:
    """Donating both inputs to a one-output function warns; donating one does not."""
    both = jax.jit(lambda s, d: s + d - 1, donate_argnums=(0, 1))
    call = call_recording_warnings(both, _arr(13), _arr(13))
    assert call.not_usable == ["Some donated buffers were not usable: float32[13]."]
    one = jax.jit(lambda s, d: s + d - 2, donate_argnums=(0,))
    result = call_recording_warnings(one, _arr(13), _arr(13))
    assert result.not_usable == []
    assert result.result.shape == (13,)


def test_jit_calls_sees_a_jit_wherever_it_is_held() -> None:
    """A donating jit held by an object is found by tracing the call; its real aliasing is read."""
    from course.grading import jit_calls

    class Holder:
        def __init__(self) -> None:
            self.step = jax.jit(lambda s, d: s + d, donate_argnums=(0,))

    holder = Holder()
    spec = jax.ShapeDtypeStruct((7,), jnp.float32)
    (call,) = jit_calls(lambda s, d: holder.step(s, d), spec, spec)
    assert call.name == "<lambda>" and call.donated == (True, False)
    assert [src.arg for src in call.sources] == [0, 1] and call.alias_bytes == 28 and not call.not_usable


def test_a_jitted_lambda_is_pointed_at_on_its_own_line(learner_module: Callable[[str], types.ModuleType]) -> None:
    """A lambda jitted on one line and called on another is named by its own line, which its name cannot
    say; a def keeps the line of its call, beside the line it was written on."""
    from pathlib import Path

    from course.grading import jit_calls

    module = learner_module("""
        import jax

        step = jax.jit(lambda s, d: s + d)


        def add(s, d):
            return s - d
        added = jax.jit(add)


        def update(s, d):
            return step(s, d) + added(s, d)
        """)
    path = Path(module.__file__)
    spec = jax.ShapeDtypeStruct((5,), jnp.float32)
    lam, named = jit_calls(module.update, spec, spec, path=path)
    assert (lam.name, lam.line, lam.defined_line, lam.where) == ("<lambda>", 13, 4, 4)
    assert (named.name, named.line, named.defined_line, named.where) == ("add", 13, 7, 13)
    assert jit_calls(module.update, spec, spec, path=path.with_name("other.py"))[0].where is None


def test_jit_calls_names_copies_and_dropped_donations() -> None:
    """A donated copy is traced back to its argument and op; a float16 result aliases nothing; a
    donation no output can use is reported with JAX's warning."""
    from course.grading import jit_calls

    spec = jax.ShapeDtypeStruct((5,), jnp.float32)
    add = jax.jit(lambda s, d: s + d, donate_argnums=0)
    (copied,) = jit_calls(lambda s, d: add(jnp.array(s), d), spec, spec)
    assert [(c.arg, c.via) for c in copied.donated_copies(0)] == [(0, "copy")]
    assert not copied.donated_copies(1)
    half = jax.jit(lambda s, d: (s + d).astype(jnp.float16), donate_argnums=0)
    assert jit_calls(lambda s, d: half(s, d), spec, spec)[0].alias_bytes == 0
    both = jax.jit(lambda s, d: s + d, donate_argnums=(0, 1))
    (warned,) = jit_calls(lambda s, d: both(s, d), spec, spec)
    assert warned.not_usable and "not usable" in warned.not_usable[0]
    assert jit_calls(lambda s, d: s + d, spec, spec) == []


def test_argument_copies_names_backups_forced_copies_and_returned_inputs(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """A backup kept in a global is a copy, as are a forced `device_put` and an input a jit returns;
    a view, `jnp.asarray` or a plain `device_put` are not."""
    from pathlib import Path

    from course.grading import argument_copies

    module = learner_module("""
        import jax
        import jax.numpy as jnp

        _add = jax.jit(lambda s, d: s + d, donate_argnums=0)
        _keep = jax.jit(lambda s, d: (s + d, s), donate_argnums=0)
        backup = []

        def kept(state, delta):
            backup.append(state.copy())
            return _add(state, delta)

        def forced(state, delta):
            backup.append(jax.device_put(state, may_alias=False))
            return _add(state, delta)

        def returned(state, delta):
            new, old = _keep(state, delta)
            backup.append(old)
            return new

        def clean(state, delta):
            backup.append(jnp.array(delta))
            return _add(jax.device_put(jnp.asarray(state[:])), delta)
    """)
    spec = jax.ShapeDtypeStruct((6,), jnp.float32)
    path = Path(module.__file__)
    assert [(c.arg, c.via, c.line) for c in argument_copies(module.kept, spec, spec, path=path)] == [(0, "copy", 10)]
    assert [(c.arg, c.via) for c in argument_copies(module.forced, spec, spec)] == [(0, "device_put")]
    assert [(c.arg, c.via) for c in argument_copies(module.returned, spec, spec)] == [(0, "returned by `<lambda>`")]
    assert [c.arg for c in argument_copies(module.clean, spec, spec)] == [1]


@pytest.mark.parametrize("helper", [
    jax.jit(lambda s, d: s + d, donate_argnums=(0,)),
    jax.jit(lambda s, d: (s + d, s * d), donate_argnums=(0, 1)),
], ids=["one array", "a tuple"])
def test_the_rebuilt_program_is_the_learners_own_module(helper: Any) -> None:
    """The program `jit_calls` compiles for a call is the very module the learner's jit lowers to (its name,
    donations and results alike), so the learner's compile, kept in the persistent cache, serves it."""
    spec = jax.ShapeDtypeStruct((37,), jnp.float32)
    (call,) = jit_calls(lambda s, d: helper(s, d), spec, spec)
    assert call.program == helper.lower(spec, spec).as_text()
