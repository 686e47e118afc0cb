"""`ref_reads_writes` with `add_kernel` storing one row at a time (bench_chip.py e2e: what only the chip refuses)."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Write `x + y` into `o_ref` one row at a time: a store at a dynamic row offset that is not a multiple of 8,
    which the interpreter runs and the chip's compiler may refuse."""

    def body(i, carry):
        rows = pl.ds(i, 1)
        o_ref[rows, :] = x_ref[rows, :] + y_ref[rows, :]
        return carry

    lax.fori_loop(0, x_ref.shape[0], body, None)


def add(x: jax.Array, y: jax.Array) -> jax.Array:
    """Element-wise `x + y` computed by `add_kernel`."""
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x, y)


def square_plus_kernel(x_ref, o_ref):
    """Write `x * x + x` into `o_ref`, loading `x_ref` once."""
    x = x_ref[...]
    o_ref[...] = x * x + x


def square_plus(x: jax.Array) -> jax.Array:
    """`x * x + x` computed by `square_plus_kernel`."""
    return pl.pallas_call(
        square_plus_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x)


@jax.jit
def row_sum(x: jax.Array) -> jax.Array:
    """Sum of the rows of `x`, accumulated into a ref and frozen at the end."""
    acc = jax.new_ref(jnp.zeros(x.shape[1], x.dtype))

    def body(i, carry):
        acc[...] += x[i]
        return carry

    lax.fori_loop(0, x.shape[0], body, None)
    return jax.freeze(acc)
