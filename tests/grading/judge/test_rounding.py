"""Tests of `judge.rounding`: the share of outputs that differ from the correctly rounded product."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from course.grading.judge.rounding import correctly_rounded, exact_matmul, rounding_report


def test_a_correctly_rounded_result_differs_nowhere() -> None:
    """Rounding the exact product once gives a share of 0; NaN counts as differing."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(jnp.bfloat16)
    y = rng.standard_normal((256, 32)).astype(jnp.bfloat16)
    exact = exact_matmul(x, y)
    good = correctly_rounded(exact, jnp.bfloat16).astype(jnp.bfloat16)
    assert rounding_report(good, exact, jnp.bfloat16).share == 0.0
    bad = good.astype(np.float32)
    bad[0, :4] = np.nan
    report = rounding_report(bad, exact, jnp.bfloat16)
    assert (report.nonfinite, report.differing) == (4, 0) and report.percent() == "0.2%"


def test_bfloat16_accumulation_is_far_off_where_float32_is_not() -> None:
    """Summing K blocks in bfloat16 leaves tens of percent off the correctly rounded product; float32 next to none."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 1024)).astype(jnp.bfloat16).astype(np.float32)
    y = rng.standard_normal((1024, 64)).astype(jnp.bfloat16).astype(np.float32)
    exact = exact_matmul(x, y)
    f32 = sum(x[:, k:k + 256] @ y[k:k + 256] for k in range(0, 1024, 256)).astype(jnp.bfloat16)
    acc = np.zeros((64, 64), jnp.bfloat16)
    for k in range(0, 1024, 256):
        acc = (acc.astype(np.float32) + x[:, k:k + 256] @ y[k:k + 256]).astype(jnp.bfloat16)
    assert rounding_report(f32, exact, jnp.bfloat16).share < 0.01
    assert rounding_report(acc, exact, jnp.bfloat16).share > 0.2
    ties = correctly_rounded(np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8]), jnp.bfloat16)  # halfway: to the even one
    assert ties.tolist() == [1.0, 1.0 + 2**-6]
