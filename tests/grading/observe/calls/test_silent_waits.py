"""Tests of `observe.calls.silent_waits`: a one-core wait that nothing will signal fails at once, named."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.calls.silent_waits import SilentWait, silent_wait_message, watching_waits
from course.grading.observe.calls.tpu import run_strict

X = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)


def again_under_when(x_hbm_ref, o_ref, buf, sem):
    """Waits for its one copy, then again under `pl.when`: a count the reading of the kernel leaves alone."""
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()

    @pl.when(pl.program_id(0) == 0)
    def _():
        copy.wait()

    o_ref[...] = buf[...]


def waited_once(x_hbm_ref, o_ref, buf, sem):
    """Starts and waits one copy."""
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()
    o_ref[...] = buf[...] + 1


def _call(kernel, x):
    """`kernel` over a grid of one step, with x in HBM, a VMEM buffer and a DMA semaphore."""
    return pl.pallas_call(kernel, grid=(1,), out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_specs=pl.BlockSpec(x.shape, lambda i: (0, 0)),
                          scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA])(x)


def test_a_wait_nothing_signals_fails_with_its_line_and_bytes() -> None:
    """The second wait raises inside the interpreter; the caller's error carries the sentence."""
    with pytest.raises(Exception) as info:
        run_strict(_call, again_under_when, X)
    line = again_under_when.__code__.co_firstlineno + 8
    message = silent_wait_message(info.value)
    assert message is not None and message.startswith(f"the kernel's `.wait()` at line {line} of test_silent_waits.py")
    assert "for 4096 bytes, but it holds 0 and no copy started on it is still in flight" in message


def test_waits_that_are_answered_run_as_before() -> None:
    """A copy started and waited once gives its values under the watch, and the watch ends with the block."""
    from jax._src.pallas.mosaic.interpret import shared_memory

    got = run_strict(_call, waited_once, X)
    assert jnp.array_equal(got, X + 1)
    assert not hasattr(shared_memory.Semaphore, "_course_watched")
    with watching_waits(), watching_waits():  # nested blocks leave one patch, undone once
        assert shared_memory.Semaphore._course_watched
    assert not hasattr(shared_memory.Semaphore, "_course_watched")


def test_other_errors_are_not_silent_waits() -> None:
    """Only a `SilentWait` is read back as one."""
    assert silent_wait_message(ValueError("boom")) is None
    assert silent_wait_message(SilentWait("x")) is None  # its own str has no marker: only XLA's text does
