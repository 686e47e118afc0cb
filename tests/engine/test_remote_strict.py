"""A judge's call made inside `tpu_interpret` runs under the same strict interpreter in the executor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from course.engine import remote
from support import served

# A kernel that reads scratch memory it never wrote: NaN under the interpreter the learner asked
# for (`interpret=True`), 0 under the strict one with `uninitialized_memory="zero"`, so the value
# tells which interpreter ran it.
LEARNER = b'''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(x_ref, o_ref):
    def body(scratch):
        o_ref[...] = scratch[...] + x_ref[...]

    pl.run_scoped(body, pltpu.VMEM(x_ref.shape, x_ref.dtype))


def unwritten_plus(x):
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)
'''


@pytest.fixture
def submission(tmp_path: Path) -> Iterator[remote.RemoteModule]:
    """The learner's module above, served by an executor in a thread, as a judge's check sees it."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        yield module


def test_call_outside_the_block_runs_as_written(submission: remote.RemoteModule) -> None:
    """Outside `tpu_interpret` the learner's own `interpret=True` decides: fresh memory reads NaN."""
    got = submission.unwritten_plus(np.ones((8, 128), np.float32))
    assert np.isnan(np.asarray(got)).all()


def test_call_inside_the_block_runs_strictly_there(submission: remote.RemoteModule) -> None:
    """Inside `tpu_interpret(uninitialized_memory="zero")` the executor runs the call under that interpreter."""
    from course.grading.observe.calls.tpu import tpu_interpret

    with tpu_interpret(uninitialized_memory="zero"):
        got = submission.unwritten_plus(np.ones((8, 128), np.float32))
    np.testing.assert_array_equal(np.asarray(got), np.ones((8, 128), np.float32))
    again = submission.unwritten_plus(np.ones((8, 128), np.float32))  # the block is closed: as written again
    assert np.isnan(np.asarray(again)).all()
