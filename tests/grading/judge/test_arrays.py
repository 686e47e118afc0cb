"""Tests of `judge.arrays`: a real jax.Array first, then dtype, shape, contents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed
from course.grading.judge.arrays import assert_array, assert_dtype, assert_is_array, assert_shape, block_mismatches


class AlwaysEqual(jax.Array):
    """A fake that claims to equal anything; `isinstance(x, jax.Array)` alone would accept it."""

    dtype = np.dtype(np.float32)
    shape = (3,)

    def __eq__(self, other: object) -> bool:
        """Equal to everything."""
        return True

    __hash__ = object.__hash__


def _message(excinfo: pytest.ExceptionInfo[CheckFailed]) -> str:
    """The learner-facing text of a failed check."""
    return str(excinfo.value)


def test_equal_arrays_pass_and_return_the_array() -> None:
    """A matching jax.Array passes, exactly and within tolerance."""
    x = jnp.arange(5, dtype=jnp.float32)
    assert assert_array(x, np.arange(5, dtype=np.float32)) is x
    assert_array(x + 1e-7, np.arange(5, dtype=np.float32), rtol=1e-6, atol=1e-6)
    assert_array(jnp.zeros((0,), jnp.float32), np.zeros(0, np.float32))


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (np.arange(3, dtype=np.float32), "NumPy array"),
        ([0.0, 1.0, 2.0], "a list of 3"),
        (None, "forget to `return`"),
        (1.5, "Python float"),
        (AlwaysEqual(), "AlwaysEqual"),
    ],
)
def test_non_arrays_fail_before_anything_else(value: object, words: str) -> None:
    """NumPy arrays, lists, None, scalars and fakes are refused, with what they are."""
    with pytest.raises(CheckFailed) as excinfo:
        assert_array(value, np.arange(3, dtype=np.float32), name="`out`")
    assert "`out` should be a jax.Array" in _message(excinfo)
    assert words in _message(excinfo)


def test_deleted_array_is_refused() -> None:
    """An array whose buffer was donated is reported as deleted, not read."""
    x = jnp.ones(4, jnp.float32)
    jax.jit(lambda a: a * 2, donate_argnums=(0,))(x)
    with pytest.raises(CheckFailed, match="deleted array"):
        assert_is_array(x)


def test_tracer_is_refused() -> None:
    """A traced value that escaped jit is not a concrete result."""
    leaked = []
    jax.jit(lambda a: leaked.append(a) or a)(jnp.ones(2))
    with pytest.raises(CheckFailed, match="traced value"):
        assert_is_array(leaked[0])


def test_dtype_is_checked_before_shape() -> None:
    """A wrong dtype is named with expected and got, even when the shape is wrong too."""
    with pytest.raises(CheckFailed) as excinfo:
        assert_array(jnp.ones(4, jnp.float16), np.ones(3, np.float32), name="the sum")
    assert _message(excinfo) == "the sum has dtype float16, expected float32"


def test_shape_mismatch_names_both_shapes() -> None:
    """A wrong shape is named with expected and got."""
    with pytest.raises(CheckFailed, match=r"has shape \(4,\), expected \(3,\)"):
        assert_array(jnp.ones(4, jnp.float32), np.ones(3, np.float32))
    with pytest.raises(CheckFailed, match=r"shape \(2, 2\), expected \(4,\)"):
        assert_shape(jnp.ones((2, 2)), (4,))


def test_contents_mismatch_names_first_index_values_and_count() -> None:
    """The message gives the first differing index, both values and how many differ."""
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = want.copy()
    got[1, 2] = 99.0
    got[2, 0] = -1.0
    with pytest.raises(CheckFailed) as excinfo:
        assert_array(jax.device_put(got), want, name="the result")
    text = _message(excinfo)
    assert "in 2 of 12 element(s)" in text
    assert "index [1, 2]: expected 6.0, got 99.0" in text


def test_a_scalar_that_differs_fails() -> None:
    """A 0-d result is compared as any other: a wrong scalar fails, with tolerance or exactly; a right one passes."""
    want = np.float32(0.25)
    assert_array(jnp.float32(0.25), want, rtol=1e-4)
    with pytest.raises(CheckFailed, match=r"in 1 of 1 element\(s\) .*index \[\]: expected 0.25, got -0.25"):
        assert_array(jnp.float32(-0.25), want, rtol=1e-4, atol=1e-6)
    with pytest.raises(CheckFailed, match=r"compared exactly.*expected 3, got 4"):
        assert_array(jnp.int32(4), np.int32(3))


def test_tolerances_are_applied_and_reported() -> None:
    """Within tolerance passes; outside it fails and says which tolerance was used."""
    want = np.full(3, 100.0, np.float32)
    assert_array(jnp.full(3, 100.01, jnp.float32), want, rtol=1e-3)
    with pytest.raises(CheckFailed, match=r"rtol=1e-06, atol=0"):
        assert_array(jnp.full(3, 100.01, jnp.float32), want, rtol=1e-6)


def test_exact_comparison_treats_matching_nans_as_equal() -> None:
    """NaN where NaN is expected is not a difference; NaN elsewhere is."""
    want = np.array([1.0, np.nan], np.float32)
    assert_array(jnp.array([1.0, jnp.nan], jnp.float32), want)
    with pytest.raises(CheckFailed, match=r"index \[0\]: expected 1.0, got nan"):
        assert_array(jnp.array([jnp.nan, jnp.nan], jnp.float32), want)


def test_integer_and_dtype_override() -> None:
    """Integers compare exactly; `dtype=` overrides the dtype taken from `expected`."""
    assert_array(jnp.arange(3, dtype=jnp.int32), [0, 1, 2], dtype=np.int32)
    with pytest.raises(CheckFailed, match="expected int32"):
        assert_dtype(jnp.arange(3, dtype=jnp.float32), np.int32)


def test_block_mismatches_say_what_each_wrong_block_holds() -> None:
    """Blocks are compared whole and classified: NaN, equal to a named array, or other values."""
    x = np.arange(16 * 256, dtype=np.float32).reshape(16, 256) + 1
    want = np.zeros_like(x)
    want[:8, :128] = 2 * x[:8, :128]
    got = want.copy()
    got[:8, 128:] = np.nan          # block (0, 1): never written
    got[8:, :128] = x[8:, :128]     # block (1, 0): holds x
    got[8, 200] = 5.0               # block (1, 1): one stray value
    found = block_mismatches(jnp.asarray(got), want, (8, 128), known={"`x`": x})
    assert [m.index for m in found] == [(0, 1), (1, 0), (1, 1)]
    assert found[0].holds() == "NaN in all 1024 elements"
    assert found[1].same_as == "`x`" and found[1].holds() == "the values of `x`"
    assert found[2].first == (8, 200) and found[2].holds() == "other values (5.0 at index [8, 200], expected 0.0)"
    assert block_mismatches(got, got, (8, 128)) == []


def test_block_mismatches_tolerance() -> None:
    """With a tolerance, a block that is close enough is not reported."""
    want = np.ones((8, 256), np.float32)
    got = want + np.float32(1e-7)
    assert block_mismatches(got, want, (8, 128)) != []
    assert block_mismatches(got, want, (8, 128), rtol=1e-6) == []
