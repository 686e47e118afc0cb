"""Grader of `tensor_parallel_mlp`: TODO(course new) say what the checks prove (one rule per check)."""

import jax.numpy as jnp
import pytest

from course.grading import assert_array


@pytest.mark.points(1)
def test_values(submission, rng):
    """tensor_parallel_mlp returns the right values."""
    x = jnp.asarray(rng.standard_normal(16), dtype=jnp.float32)
    expected = x  # TODO(course new): compute the expected value without the submission.
    assert_array(submission.tensor_parallel_mlp(x), expected, name="the result of `tensor_parallel_mlp(x)`")
