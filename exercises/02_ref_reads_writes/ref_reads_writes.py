"""Exercise `ref_reads_writes`: a read of a ref is a load, a write is a store.

Fill in each function; `course show ref_reads_writes` prints the lesson and the task.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Write `x + y` into `o_ref`: one load of each input, one store."""
    # TODO: read each input ref once, add, and store the sum into o_ref once.
    raise NotImplementedError("add_kernel")


def add(x: jax.Array, y: jax.Array) -> jax.Array:
    """Element-wise `x + y` computed by `add_kernel` in a `pl.pallas_call`."""
    # TODO: call pl.pallas_call(add_kernel, out_shape=...) on x and y (no interpret=: the grader
    # interprets it on a CPU, and a TPU compiles it).
    raise NotImplementedError("add")


def square_plus_kernel(x_ref, o_ref):
    """Write `x * x + x` into `o_ref`, loading `x_ref` only once."""
    # TODO: one load of x_ref, one store into o_ref.
    raise NotImplementedError("square_plus_kernel")


def square_plus(x: jax.Array) -> jax.Array:
    """`x * x + x` computed by `square_plus_kernel` in a `pl.pallas_call`."""
    # TODO: the pallas_call wrapper, as for `add`.
    raise NotImplementedError("square_plus")


def row_sum(x: jax.Array) -> jax.Array:
    """Sum of the rows of the 2-D `x` (shape `(x.shape[1],)`), accumulated in a `jax.new_ref`."""
    # TODO: inside jax.jit, make a zero ref with jax.new_ref, add each row into it in a loop
    # (lax.fori_loop or a Python loop), and return jax.freeze of it. No jnp.sum.
    raise NotImplementedError("row_sum")
