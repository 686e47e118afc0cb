"""Tests of `observe.calls.reruns` where the learner's code runs in the grader's process: what the programs of a
call compute, and the verdict when its result was made outside them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed
from course.grading.observe.calls.reruns import program_values

OUTSIDE = "made outside its programs"


@jax.jit
def _step(state: jax.Array, delta: jax.Array) -> jax.Array:
    """A jitted sum: the program that makes the result."""
    return state + delta


def _args(n: int = 16) -> tuple[jax.Array, jax.Array]:
    """Two fresh float32 vectors."""
    rng = np.random.default_rng(n)
    return jnp.asarray(rng.standard_normal(n), jnp.float32), jnp.asarray(rng.standard_normal(n), jnp.float32)


def test_a_jitted_result_is_what_its_program_computes() -> None:
    """A result returned as the jitted program made it comes back as that program's value, leaf by leaf."""
    state, delta = _args()
    values = program_values(lambda s, d: {"a": _step(s, d), "b": _step(d, d)}, state, delta, needed=2, count=2,
                            made_outside=OUTSIDE)
    assert values is not None and len(values) == 2
    np.testing.assert_allclose(values[0], state + delta)
    np.testing.assert_allclose(values[1], delta + delta)


def test_a_result_copied_through_the_host_is_made_outside() -> None:
    """The program ran, but what the call returns is a NumPy copy of its output: the check's own words fail it."""
    state, delta = _args()
    with pytest.raises(CheckFailed, match=OUTSIDE):
        program_values(lambda s, d: jnp.asarray(np.asarray(_step(s, d)) * 1), state, delta, made_outside=OUTSIDE)


def test_a_call_that_ran_no_program_is_left_to_other_checks_unless_asked() -> None:
    """A NumPy-only call runs no program: skipped by default (its jit checks judge it), made outside when the
    check owns that verdict."""
    state, delta = np.ones(4, np.float32), np.ones(4, np.float32)
    assert program_values(lambda s, d: s + d, state, delta, made_outside=OUTSIDE) is None
    with pytest.raises(CheckFailed, match=OUTSIDE):
        program_values(lambda s, d: s + d, state, delta, made_outside=OUTSIDE, skip_without_programs=False)


def test_a_result_of_another_structure_fails() -> None:
    """A result with more leaves than the check reads is not the step it asked for."""
    state, delta = _args()
    with pytest.raises(CheckFailed, match=OUTSIDE):
        program_values(lambda s, d: (_step(s, d), _step(s, d)), state, delta, needed=1, count=1,
                       made_outside=OUTSIDE)


def test_only_the_needed_leaves_must_be_computed() -> None:
    """A trailing leaf the check does not read (a loss reported beside the params) may come from anywhere."""
    state, delta = _args()
    values = program_values(lambda s, d: (_step(s, d), np.float32(0.5)), state, delta, needed=1, count=2,
                            made_outside=OUTSIDE)
    assert values is not None
    np.testing.assert_allclose(values[0], state + delta)


def test_an_ahead_of_time_call_is_left_to_other_checks() -> None:
    """JAX keeps no program of an ahead-of-time compiled call to run again: nothing is judged here."""
    state, delta = _args()
    compiled = _step.lower(state, delta).compile()
    assert program_values(compiled, state, delta, made_outside=OUTSIDE) is None


def test_a_donating_call_is_run_again_on_copies_of_what_it_consumed() -> None:
    """A call that donates its arguments deletes them; the programs run again on copies taken before it."""
    state, delta = _args(8)
    want = np.asarray(state) + np.asarray(delta)
    donating = jax.jit(lambda s, d: s + d, donate_argnums=0)
    values = program_values(donating, state, delta, made_outside=OUTSIDE)
    assert values is not None
    np.testing.assert_allclose(values[0], want)
