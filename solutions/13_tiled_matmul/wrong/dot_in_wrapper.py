"""Computes the product with jnp.dot in the wrapper and only copies it through a kernel; must fail test_kernel_does_the_work."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def copy_kernel(p_ref, o_ref):
    """Copies a block of the product that XLA already computed."""
    o_ref[...] = p_ref[...]


@jax.jit
def matmul(x, y):
    """XLA does the matmul; the kernel is a copy."""
    product = jnp.dot(x, y, preferred_element_type=jnp.float32).astype(x.dtype)
    m, n = product.shape
    return pl.pallas_call(
        copy_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(product)
