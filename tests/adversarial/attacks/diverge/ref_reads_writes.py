"""Exercise: `ref_reads_writes` (Part 1, buffers, refs, aliasing). A file that shows one program when traced and
runs another when called.

`add_kernel`, `square_plus` and `row_sum` are the reference's. Traced (its arguments are `jax.core.Tracer`s, as
when the grader traces it for its kernels), `add` calls `add_kernel` through `pl.pallas_call`; called with real
arrays, as every values check calls it, it returns `x + y` from XLA, no kernel at all (the mistake of
`wrong/add_outside_kernel.py`, made whole).

Deserved: "`add` runs `add_kernel`" fails (`test_add_in_pallas_call`), and with it what the grader says of the
kernel `add` runs (`test_add_kernel_loads_and_stores`): its values come from plain calls, whose program has no kernel.

Scored through `course check` when this file was added: 15 of 15, "passed".
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Write `x + y` into `o_ref`: one load of each input, one store."""
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x: jax.Array, y: jax.Array) -> jax.Array:
    """`add_kernel` when traced; XLA's own addition when called with real arrays."""
    if not isinstance(x, jax.core.Tracer):
        return x + y
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
