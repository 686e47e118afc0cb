"""Makes the accumulator scratch in the inputs' dtype and adds the float32 product to it as it is, which Pallas refuses for bfloat16 inputs while tracing; must fail test_accumulator_is_float32_vmem."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(a_ref, b_ref, c_ref, acc_ref):
    """Sum the K steps in acc_ref, write c once at the end."""
    step = pl.program_id(2)
    product = lax.dot_general(a_ref[...], b_ref[...], (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)

    @pl.when(step == 0)
    def _():
        acc_ref[...] = jnp.zeros(acc_ref.shape, acc_ref.dtype)

    acc_ref[...] += product

    @pl.when(step == pl.num_programs(2) - 1)
    def _():
        c_ref[...] = acc_ref[...].astype(c_ref.dtype)


@jax.jit
def matmul(x, y):
    m, k = x.shape
    n = y.shape[1]
    tm = 256 if m % 256 == 0 else 128
    tn = 256 if n % 256 == 0 else 128
    tk = 512 if k % 512 == 0 else 128
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // tm, n // tn, k // tk),
        in_specs=[pl.BlockSpec((tm, tk), lambda i, j, s: (i, s)), pl.BlockSpec((tk, tn), lambda i, j, s: (s, j))],
        out_specs=pl.BlockSpec((tm, tn), lambda i, j, s: (i, j)),
        scratch_shapes=[pltpu.VMEM((tm, tn), x.dtype)],
    )(x, y)
