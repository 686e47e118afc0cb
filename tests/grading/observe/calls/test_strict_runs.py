"""Tests of `observe.calls.strict_runs`: one jit per grading, both DMA landings, and the abstract-TPU fallback."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.calls.strict_runs import abstract_tpu, jitted_once, needs_tpu, strict_values, tpu_fallback

X = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)


def early_kernel(x_hbm, o_ref, buf, sem):
    """Reads its buffer between the copy's start and wait: right only if the copy lands at its start."""
    copy = pltpu.make_async_copy(x_hbm, buf, sem)
    copy.start()
    o_ref[...] = buf[...]
    copy.wait()


def early(x):
    """early_kernel as a learner would call it, with interpret=True."""
    return pl.pallas_call(early_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
                          interpret=True)(x)


def test_copies_land_at_their_wait_and_again_at_their_start() -> None:
    """The same jitted function: NaN when copies land at their wait, x when they land at their start."""
    fn = jitted_once(early, "early_kernel test")
    assert jitted_once(lambda x: x, "early_kernel test") is fn  # one jit per key for the whole grading
    assert np.isnan(np.asarray(strict_values(fn, X))).all()
    np.testing.assert_array_equal(np.asarray(strict_values(fn, X, dma_execution_mode="eager")), np.asarray(X))


def test_a_trace_that_needs_a_tpu_is_retried_on_an_abstract_one() -> None:
    """emit_pipeline asks for the TPU's kind while tracing; the fallback traces it on a v5e, other errors pass."""
    def kernel(x_hbm, o_hbm):
        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...]

        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        pltpu.emit_pipeline(body, grid=(2,), in_specs=[spec], out_specs=[spec])(x_hbm, o_hbm)

    def run(x):
        anyspec = pl.BlockSpec(memory_space=pl.ANY)
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), in_specs=[anyspec],
                              out_specs=anyspec, interpret=True)(x)

    x = jnp.zeros((16, 128), jnp.float32)  # two blocks: a single whole-array block needs no TPU facts
    with pytest.raises(ValueError, match="Unsupported TPU device kind") as raised:
        jax.make_jaxpr(run)(x)
    assert needs_tpu(raised.value)
    assert "pallas_call" in str(tpu_fallback(lambda: jax.make_jaxpr(run)(x)))
    with abstract_tpu():
        jax.make_jaxpr(run)(x)
    with pytest.raises(ValueError, match="other"):
        tpu_fallback(lambda: (_ for _ in ()).throw(ValueError("other")))
