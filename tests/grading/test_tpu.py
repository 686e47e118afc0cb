"""Tests of `course.grading.tpu`: the strict TPU interpreter swapped in for `interpret=True`."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.tpu import run_strict, strict_params, tpu_interpret

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


def _call(kernel, x):
    """A pallas_call with ANY in and out, written as a learner would: interpret=True."""
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[ANY], out_specs=ANY, interpret=True)(x)


def test_direct_indexing_passes_loosely_and_fails_strictly() -> None:
    """interpret=True accepts direct indexing of ANY; the strict interpreter raises."""
    np.testing.assert_array_equal(_call(direct_kernel, X), np.asarray(X) + 1)
    with pytest.raises(ValueError, match="cannot be referenced directly"):
        run_strict(_call, direct_kernel, X)
    assert pl.pallas_call.__name__ == "pallas_call"  # restored after the exception


def test_correct_kernel_passes_strictly() -> None:
    """A kernel that copies through VMEM gives the right value under the TPU interpreter."""
    np.testing.assert_array_equal(run_strict(_call, copy_kernel, X), np.asarray(X) + 1)


def test_names_imported_into_a_module_are_swapped_too() -> None:
    """A learner's `from ... import pallas_call` is patched for the block and restored after."""
    module = types.ModuleType("learner")
    module.pallas_call = pl.pallas_call
    original = pl.pallas_call
    with tpu_interpret(module) as params:
        assert module.pallas_call is not original and pl.pallas_call is not original
        assert isinstance(params, pltpu.InterpretParams)
    assert module.pallas_call is original and pl.pallas_call is original


def test_strict_params_keep_defaults_unless_overridden() -> None:
    """Defaults are the strict ones; overrides change only what they name."""
    params = strict_params(detect_races=True)
    assert params.detect_races and params.out_of_bounds_reads == "raise"
    assert strict_params().uninitialized_memory == "nan"
