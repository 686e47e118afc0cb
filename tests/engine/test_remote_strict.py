"""A judge's call made inside `tpu_interpret` runs under the same strict interpreter in the executor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from course.engine.judge import remote
from support import served

# A kernel that reads scratch memory it never wrote: NaN under the strict interpreter a grading runs
# every kernel in (whatever `interpret=` says), 0 under the strict one with `uninitialized_memory="zero"`,
# so the value tells which parameters ran it.
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


jitted_plus = jax.jit(unwritten_plus)
'''


@pytest.fixture
def submission(tmp_path: Path) -> Iterator[remote.RemoteModule]:
    """The learner's module above, served by an executor in a thread, as a judge's check sees it."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        yield module


def test_call_outside_the_block_runs_as_written(submission: remote.RemoteModule) -> None:
    """Outside `tpu_interpret` the grading's default, the strict interpreter, runs it: fresh memory reads NaN."""
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


def test_watched_calls_inside_the_block_run_and_trace_there_under_it(submission: remote.RemoteModule,
                                                                      tmp_path: Path) -> None:
    """`watched_calls` inside `tpu_interpret` makes the calls and their traces under the strict interpreter in the
    executor: a kernel compiled for the interpreter (its program threads the interpreter's effect token) is read
    in the judge as the call's own program, and a second call of the same shape compiles nothing."""
    from course.grading.observe.calls.tpu import tpu_interpret
    from course.grading.observe.calls.warmup import after_warmup, watched_calls

    x = np.ones((8, 128), np.float32)
    path = tmp_path / "learner.py"
    with tpu_interpret(uninitialized_memory="zero"):
        jitted = watched_calls(submission.jitted_plus, [(x,), (x,)], module=submission, path=path)  # type: ignore[arg-type]
        plain = watched_calls(submission.unwritten_plus, [(x,), (x,)], module=submission, path=path)  # type: ignore[arg-type]
    assert all(w.traced and w.programs for w in jitted) and not after_warmup(jitted).compiles
    # The strict interpreter's host callbacks thread a token through the program; `interpret=True` has none.
    assert "token[]" in jitted[0].programs[0].compiled.split("->")[0]
    assert [w.compiled for w in plain] == [("jit(wrapped)",)] * 2  # an un-jitted pallas_call compiles every call


ALIASED = b'''
def swap_late(x_ref, o_ref):
    n = x_ref.shape[1] // 2
    o_ref[:, :n] = x_ref[:, n:]
    o_ref[:, n:] = x_ref[:, :n]  # reads what the line above wrote, when the two refs are one
'''


def test_a_kernel_runs_aliased_there_and_its_values_come_back(tmp_path: Path) -> None:
    """`run_aliased` of the learner's kernel seen from the judge runs it there with `x_ref` and `o_ref` one ref and
    sends the values back for the judge to compare; `hazard_message` brings the executor's words for the read that
    followed an overlapping write, naming the learner's line."""
    import jax

    from course.grading.observe.kernels.aliasing import hazard_message, run_aliased

    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    spec = jax.ShapeDtypeStruct(x.shape, np.float32)
    with served(tmp_path / "learner.py", ALIASED) as module:
        shared = np.asarray(run_aliased(module.swap_late, x, out_shape=spec, input_output_aliases={0: 0}))
        apart = np.asarray(run_aliased(module.swap_late, x, out_shape=spec, input_output_aliases={}))
        said = hazard_message(module.swap_late, x, out_shape=spec, input_output_aliases={0: 0})
    np.testing.assert_array_equal(apart, np.concatenate([x[:, 4:], x[:, :4]], axis=1))
    np.testing.assert_array_equal(shared, np.concatenate([x[:, 4:], x[:, 4:]], axis=1))  # the left half was lost
    assert said is not None and "line 5" in said and "line 4" in said, said


NO_INTERPRET = b'''
import jax
from jax.experimental import pallas as pl


def _double(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def double(x):
    return pl.pallas_call(_double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''


def test_a_file_that_names_no_interpreter_runs_strictly_there(tmp_path: Path) -> None:
    """A learner's file as a TPU compiles it, with no `interpret=`, runs in the executor all the same: the strict
    interpreter is every kernel's default there from before the file is imported, and only there."""
    from jax._src import config

    with served(tmp_path / "learner.py", NO_INTERPRET) as module:
        got = module.double(np.ones((8, 128), np.float32))
    np.testing.assert_array_equal(np.asarray(got), np.full((8, 128), 2, np.float32))
    assert config.pallas_tpu_interpret_mode_context_manager.get_global() is None  # the test process is left as it was
