"""Grader of `donate_double`: facts read from JAX itself (a deleted buffer, compile events)."""

import jax
import jax.numpy as jnp
import numpy as np

from course.grading import CompileRecorder, assert_array, check, is_consumed, own_function_names


def test_consumed(submission, rng):
    """donate_double returns 2 * x and consumes x."""
    data = rng.standard_normal(7).astype(np.float32)
    x = jax.device_put(data)
    assert_array(submission.donate_double(x), 2 * data)
    check(is_consumed(x), "x is still alive: it was not donated")


def test_compiled_once(submission, rng):
    """Calls of one shape after the first compile nothing."""
    names = own_function_names(submission)
    jax.block_until_ready(submission.donate_double(jnp.ones(5)))
    with CompileRecorder(names) as rec:
        for _ in range(3):
            jax.block_until_ready(submission.donate_double(jnp.ones(5)))
    check(rec.count() == 0, f"three more calls compiled {rec.count()} times")
