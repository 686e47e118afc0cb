"""Grader of `collective_matmul`: TODO(course new) say what the checks prove (one rule per check)."""

import jax.numpy as jnp
import pytest

from course.grading import assert_array


@pytest.mark.points(1)
def test_values(submission, rng):
    """collective_matmul returns the right values."""
    x = jnp.asarray(rng.standard_normal(16), dtype=jnp.float32)
    expected = x  # TODO(course new): compute the expected value without the submission.
    assert_array(submission.collective_matmul(x), expected, name="the result of `collective_matmul(x)`")
