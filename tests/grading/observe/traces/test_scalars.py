"""Tests of `observe.traces.scalars`: lax's integer arithmetic worked out in NumPy, floating-point data unknown."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from course.grading.observe.kernels.kernel_trace import evaluate_jaxpr
from course.grading.observe.traces.scalars import Unknown, apply, const_value, is_known


def _eval(fn, *args):
    """Evaluate `fn`'s jaxpr on NumPy values, without compiling."""
    return evaluate_jaxpr(jax.make_jaxpr(fn)(*args), *args)


def test_integer_division_and_remainder_follow_lax() -> None:
    """div rounds toward zero and rem takes the dividend's sign (not Python's floor rules); jnp.remainder floors."""
    got = _eval(lambda a, b: (lax.div(a, b), lax.rem(a, b), jnp.remainder(a, b), a // b), np.int32(-7), np.int32(2))
    assert [int(v) for v in got] == [-3, -1, 1, -4]


def test_int32_wraps_and_unsigned_counters_work() -> None:
    """Overflow wraps like the hardware's; uint32 arithmetic (emit_pipeline's slot counters) is exact."""
    (wrapped,) = _eval(lambda a: a + 1, np.int32(2**31 - 1))
    assert wrapped.dtype == np.int32 and int(wrapped) == -(2**31)
    (slot,) = _eval(lambda a: lax.rem(a + jnp.uint32(1), jnp.uint32(2)), np.uint32(4))
    assert slot.dtype == np.uint32 and int(slot) == 1
    (shifted,) = _eval(lambda a: lax.shift_right_logical(a, jnp.int32(28)), np.int32(-1))
    assert int(shifted) == 15


def test_selects_comparisons_and_shapes() -> None:
    """select_n, comparisons, iota, broadcasts and reductions give NumPy's answers."""
    def fn(i):
        mask = lax.broadcasted_iota(jnp.int32, (4, 3), 0) < i
        return jnp.where(mask, 1, 0).sum(), jnp.where(i > 2, i * 3, -i), jnp.maximum(i, 7)

    assert [int(v) for v in _eval(fn, np.int32(2))] == [6, -2, 7]
    assert [int(v) for v in _eval(fn, np.int32(3))] == [9, 9, 7]


def test_floating_point_data_stays_unknown() -> None:
    """A float operand the trace does not know makes the result Unknown, with its shape and dtype; known
    operands (literals) are computed; small integer constants are known, float constants are not."""
    closed = jax.make_jaxpr(lambda x: jnp.exp(x) * 2)(jnp.ones((8, 128)))
    exp_eqn, mul_eqn = closed.jaxpr.eqns
    unknown = apply(exp_eqn, [Unknown((8, 128), np.float32)])[0]
    assert unknown == Unknown((8, 128), np.dtype(np.float32))
    assert apply(mul_eqn, [unknown, np.asarray(2.0, np.float32)])[0] == unknown
    (known,) = apply(exp_eqn, [np.zeros((8, 128), np.float32)])
    assert is_known(known) and known.dtype == np.float32 and (known == 1).all()
    assert const_value(np.arange(3, dtype=np.int32)).tolist() == [0, 1, 2]
    assert isinstance(const_value(np.ones((2, 2), np.float32)), Unknown)
