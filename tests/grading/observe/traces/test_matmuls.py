"""Tests of `observe.traces.matmuls`: each dot_general's shapes, dtypes, flops and trip count, and the work in all."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from course.grading.observe.traces.matmuls import float32_matmuls, matmul_flops, matmuls_of, mflop, repeated_matmuls


def test_every_spelling_of_a_matmul_is_one_dot_general_with_its_flops() -> None:
    """`@`, jnp.dot, einsum and lax.dot_general each cost 2 * output size * contracted size."""
    x, w = jnp.ones((8, 16)), jnp.ones((16, 32))
    for fn in (lambda a, b: a @ b, jnp.dot, lambda a, b: jnp.einsum("ik,kj->ij", a, b),
               lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())))):
        (m,) = matmuls_of(fn, x, w)
        assert (m.lhs, m.rhs, m.out) == ("float32[8, 16]", "float32[16, 32]", "float32[8, 32]")
        assert (m.flops, m.contracted, m.batch, m.times, m.total_flops) == (2 * 8 * 32 * 16, 16, 1, 1, 8192)
        assert m.describe() == "float32[8, 16] @ float32[16, 32] -> float32[8, 32]" and not m.loops


def test_loops_multiply_the_work_and_a_while_makes_it_unknown() -> None:
    """A scan of 5 runs its matmul 5 times; under a while_loop the total is None."""
    x = jnp.ones((4, 4))
    (m,) = matmuls_of(lambda v: lax.scan(lambda h, _: (h @ h, None), v, None, length=5)[0], x)
    assert (m.times, m.total_flops, m.in_loop, m.innermost_loop()[:2]) == (5, 5 * 128, True, ("scan", 5))
    found = matmuls_of(lambda v, n: lax.fori_loop(0, n, lambda i, h: h @ h, v), x, 3)
    assert found[0].times is None and found[0].unknown.startswith("inside a while_loop")
    assert matmul_flops(found) is None and found[0].innermost_loop()[:2] == ("while", None)


def test_dtypes_and_preferred_element_type_are_reported() -> None:
    """bf16 operands with a float32 result read as such; a batched einsum counts its batch."""
    a, b = jnp.ones((4, 8), jnp.bfloat16), jnp.ones((8, 2), jnp.bfloat16)
    (m,) = matmuls_of(lambda p, q: jnp.dot(p, q, preferred_element_type=jnp.float32), a, b)
    assert (m.lhs_dtype, m.rhs_dtype, m.out_dtype, m.preferred) == ("bfloat16", "bfloat16", "float32", "float32")
    (m,) = matmuls_of(lambda p, q: jnp.einsum("bik,bkj->bij", p, q), jnp.ones((3, 4, 5)), jnp.ones((3, 5, 6)))
    assert (m.batch, m.contracted, m.flops) == (3, 5, 2 * 3 * 4 * 6 * 5)


def test_a_backward_pass_holds_the_operand_gradients_and_recomputation_repeats_a_signature() -> None:
    """grad of x @ w adds two matmuls of other shapes; a checkpoint that saves nothing computes x @ w again."""
    x, w = jnp.ones((8, 16)), jnp.ones((16, 32))

    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    plain = matmuls_of(jax.grad(loss, argnums=(0, 1)), w, x)
    assert len(plain) == 3 and not repeated_matmuls(plain) and matmul_flops(plain) == 3 * 8192
    step = jax.checkpoint(lambda h, w: (jnp.sin(h @ w), None), policy=jax.checkpoint_policies.nothing_saveable)

    def scanned(w, x):
        return jnp.sum(lax.scan(lambda h, _: step(h, w), x, None, length=2)[0])

    remat = matmuls_of(jax.grad(scanned), jnp.ones((16, 16)), jnp.ones((8, 16)))
    ((first, count),) = repeated_matmuls(remat)
    assert count == 2 and first.describe() == "float32[8, 16] @ float32[16, 16] -> float32[8, 16]"


def test_mflop_rounds_to_millions() -> None:
    """Messages quote work in MFLOP."""
    assert mflop(1_610_612_736) == "1611 MFLOP"


def test_dtypes_of_a_mixed_precision_step_and_its_float32_matmuls() -> None:
    """The forward matmul is bf16 x bf16 -> f32, the backward ones f32 x bf16; only an f32 copy is f32 x f32."""
    def loss(w, x):
        return jnp.sum(jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32))

    found = matmuls_of(jax.grad(loss), jnp.ones((16, 8)), jnp.ones((4, 16)))
    assert found[0].dtype_text() == "multiplies bfloat16[4, 16] by bfloat16[16, 8] into float32"
    assert [m.lhs_dtype for m in found[1:]] == ["float32"] and float32_matmuls(found) == []
    (emulated,) = matmuls_of(lambda a, b: a.astype(jnp.bfloat16).astype(jnp.float32) @ b, jnp.ones((4, 16)),
                             jnp.ones((16, 8)))
    assert float32_matmuls([emulated]) == [emulated] and emulated.precision is None


def test_precision_is_reported_only_when_asked_for() -> None:
    """precision=HIGHEST is kept on the Matmul; it does not change the result's dtype."""
    a = jnp.ones((4, 8), jnp.bfloat16)
    (m,) = matmuls_of(lambda p, q: lax.dot(p, q, precision=lax.Precision.HIGHEST), a, a.T)
    assert (m.precision, m.out_dtype) == ("HIGHEST", "bfloat16")


def test_a_matmul_under_a_cond_runs_at_most_its_loops_trips() -> None:
    """Under a cond inside a scan of 6 the count is unknown but at most 6; under a while_loop not even that."""
    x = jnp.ones((4, 4))

    def step(h, t):
        """Multiply only on even steps."""
        return lax.cond(t % 2 == 0, lambda v: v @ v, lambda v: v, h), None

    (m,) = matmuls_of(lambda v: lax.scan(step, v, jnp.arange(6))[0], x)
    assert m.times is None and m.unknown.startswith("inside a cond") and m.at_most == 6
    (m,) = matmuls_of(lambda v: v @ v, x)
    assert m.at_most == m.times == 1
    (m,) = matmuls_of(lambda v, n: lax.fori_loop(0, n, lambda i, h: lax.cond(i > 0, lambda a: a @ a, lambda a: a, h),
                                                 v), x, 3)
    assert m.times is None and m.at_most is None
