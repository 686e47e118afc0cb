"""Grader of `double_array`: checked as a real `jax.Array` (type, dtype, shape, then contents)."""

import jax.numpy as jnp
import numpy as np

from course.grading import assert_array


def test_random(submission, rng):
    """double_array returns twice a random float32 vector as a jax.Array."""
    x = rng.standard_normal(int(rng.integers(3, 9))).astype(np.float32)
    assert_array(submission.double_array(jnp.asarray(x)), 2 * x)
