"""Tests of `observe.calls.tpu`: the strict TPU interpreter forced over whatever the learner passed."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.calls.tpu import interpreter_failure, run_strict, strict_params, tpu_interpret

X = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def direct_kernel(x_ref, o_ref):
    """Indexes an ANY ref directly: forgiven by interpret=True, refused on a TPU."""
    o_ref[...] = x_ref[...] + 1


def copy_kernel(x_ref, o_ref):
    """Moves the ANY input through VMEM scratch with sync_copy, as a TPU requires."""
    def body(buf):
        pltpu.sync_copy(x_ref, buf)
        buf[...] = buf[...] + 1
        pltpu.sync_copy(buf, o_ref)

    pl.run_scoped(body, pltpu.VMEM(X.shape, X.dtype))


def half_kernel(x_ref, o_ref):
    """Writes only the first block of rows; the rest of the output is never written."""
    o_ref[:8] = x_ref[:8] + 1


def converting_kernel(x_ref, o_ref):
    """DMAs bfloat16 into a float32 buffer, which the simulator refuses inside a callback."""
    def body(buf):
        pltpu.sync_copy(x_ref, buf)
        o_ref[...] = buf[...].astype(o_ref.dtype)

    pl.run_scoped(body, pltpu.VMEM(x_ref.shape, jnp.float32))


def _call(kernel, x, out_spec=ANY):
    """A pallas_call with ANY in (and out, unless told), written as a learner would: interpret=True."""
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[ANY], out_specs=out_spec, interpret=True)(x)


# Made at import with the learner's own lenient params: forcing the mode must still reach it.
_zeroing = functools.partial(pl.pallas_call, half_kernel,
                             interpret=pltpu.InterpretParams(uninitialized_memory="zero"))


@jax.jit
def _jitted_half(x):
    """A module-level jit around the partial, traced before the strict block is entered."""
    return _zeroing(out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def test_direct_indexing_passes_loosely_and_fails_strictly() -> None:
    """interpret=True accepts direct indexing of ANY; the strict interpreter raises."""
    np.testing.assert_array_equal(_call(direct_kernel, X), np.asarray(X) + 1)
    with pytest.raises(ValueError, match="cannot be referenced directly"):
        run_strict(_call, direct_kernel, X)


def test_correct_kernel_passes_strictly() -> None:
    """A kernel that copies through VMEM gives the right value under the TPU interpreter."""
    np.testing.assert_array_equal(run_strict(_call, copy_kernel, X), np.asarray(X) + 1)


def test_forced_over_a_partial_made_at_import_and_a_cached_jit() -> None:
    """The learner's `uninitialized_memory='zero'` is overridden, and the jit retraces both ways."""
    x = jnp.ones((16, 128), jnp.float32)
    assert not np.isnan(np.asarray(_jitted_half(x))).any()  # zeros where nothing was written
    strict = np.asarray(run_strict(_jitted_half, x))
    assert np.isnan(strict[8:]).all() and (strict[:8] == 2).all()
    assert not np.isnan(np.asarray(_jitted_half(x))).any()  # the learner's mode again afterwards


def test_state_reset_after_a_failure_inside_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DMA between dtypes fails in a callback; the state is reset, the error named, the next kernel runs."""
    resets = []
    reset = pltpu.reset_tpu_interpret_mode_state
    monkeypatch.setattr(pltpu, "reset_tpu_interpret_mode_state", lambda: resets.append(reset()))
    run_strict(_call, copy_kernel, X)
    assert not resets  # a clean run leaves the simulator alone
    x = jnp.ones((8, 128), jnp.bfloat16)
    with pytest.raises(Exception) as info:  # noqa: PT011 - JAX wraps it in JaxRuntimeError
        run_strict(_call, converting_kernel, x, pl.BlockSpec(memory_space=pltpu.VMEM))
    assert len(resets) == 1
    assert interpreter_failure(info.value).startswith("AssertionError")
    assert interpreter_failure(ValueError("plain")) is None
    np.testing.assert_array_equal(run_strict(_call, copy_kernel, X), np.asarray(X) + 1)


def test_params_are_yielded_and_the_mode_ends_with_the_block() -> None:
    """The block yields the forced params; outside it the learner's `interpret=True` applies again."""
    with tpu_interpret(detect_races=True) as params:
        assert isinstance(params, pltpu.InterpretParams) and params.detect_races
    np.testing.assert_array_equal(_call(direct_kernel, X), np.asarray(X) + 1)


def test_strict_params_keep_defaults_unless_overridden() -> None:
    """Defaults are the strict ones; overrides change only what they name."""
    params = strict_params(detect_races=True)
    assert params.detect_races and params.out_of_bounds_reads == "raise"
    assert strict_params().uninitialized_memory == "nan"
