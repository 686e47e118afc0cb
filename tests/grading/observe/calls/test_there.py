"""`in_executor`: a grader's observation runs where the learner's code runs, and only what it returns comes back."""

from __future__ import annotations

import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed, fail, learner_location
from course.grading.observe.calls.there import in_executor, registered
from support import served

LEARNER = b'''
import os

import jax.numpy as jnp


def double(x):
    return x * 2


def where():
    return os.getpid(), id(double)


def refuse(x):
    raise IndexError("no such row")
'''


@in_executor
def _doubled_under_jit(submission: types.ModuleType, x: np.ndarray) -> tuple[jax.Array, int]:
    """The learner's `double` inside the grader's own `jax.jit`, and the id of the function it called."""
    return jax.jit(lambda v: submission.double(v) + 1)(jnp.asarray(x)), id(submission.double)


@in_executor
def _failing(submission: types.ModuleType, limit: float) -> None:
    """An observation that fails its check where it runs."""
    if float(np.asarray(submission.double(np.float32(limit)))) > limit:
        fail(f"double({limit}) is more than {limit}")


@in_executor
def _refused(submission: types.ModuleType) -> None:
    """An observation whose learner call raises."""
    submission.refuse(np.zeros(3, np.float32))


def test_outside_a_split_grading_it_is_an_ordinary_call(tmp_path: Path) -> None:
    """Given the learner's own module, the function runs here, on that module."""
    module = types.ModuleType("learner")
    exec(compile(LEARNER, "learner.py", "exec"), module.__dict__)  # noqa: S102 - a test's own learner file
    out, called = _doubled_under_jit(module, np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), [1, 3, 5, 7])
    assert called == id(module.double)


def test_in_a_judge_check_it_runs_in_the_executor_on_its_module(tmp_path: Path) -> None:
    """Given the judge's view of the module, the function runs in the executor, on the module imported there (the
    judge never holds the learner's function), inside a `jax.jit` of the grader's, and its values come back."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        out, called = _doubled_under_jit(module, np.arange(4, dtype=np.float32))
        assert isinstance(out, jax.Array)
        np.testing.assert_array_equal(np.asarray(out), [1, 3, 5, 7])
        assert called == module.where()[1]  # the executor's own function object, not one the judge made


def test_a_check_it_fails_there_fails_here_and_what_the_learner_raised_is_raised_here(tmp_path: Path) -> None:
    """A `fail` inside the observation fails the judge's check with its message (it can only cost points); what the
    learner's code raised comes back as the same built-in class, as any call's error does."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        with pytest.raises(CheckFailed, match=r"double\(1.5\) is more than 1.5"):
            _failing(module, 1.5)
        with pytest.raises(IndexError, match="no such row") as raised:
            _refused(module)
        assert "line 16" in learner_location(raised.value.__traceback__, tmp_path / "learner.py")


def test_the_executor_runs_only_observations_it_knows(tmp_path: Path) -> None:
    """A key that names no marked function of the grader is refused there, and nothing runs."""
    assert registered(f"{__name__}:_failing") is not None and registered(f"{__name__}:missing") is None
    with served(tmp_path / "learner.py", LEARNER) as module, pytest.raises(Exception, match="unknown"):
        module.observation(f"{__name__}:missing")
