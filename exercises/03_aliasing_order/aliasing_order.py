"""Exercise `aliasing_order`: with `input_output_aliases`, the order of reads and writes is semantics.

The two kernels below give the right answer when the interpreter copies each ref, and are still
wrong: run `course check aliasing_order` to see why. `course show aliasing_order` prints the lesson.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """o[:, :n] = x[:, n:] and o[:, n:] = x[:, :n], correct even when x_ref and o_ref are one buffer."""
    # TODO: this order breaks when o_ref and x_ref share memory. Fix it.
    n = x_ref.shape[1] // 2
    o_ref[:, :n] = x_ref[:, n:]
    o_ref[:, n:] = x_ref[:, :n]


def swap_halves(x: jax.Array) -> jax.Array:
    """`swap_halves_kernel` in a `pallas_call` aliasing x onto the output, jitted once, donating x."""
    # TODO: pl.pallas_call(..., input_output_aliases={0: 0}), inside a jax.jit
    # built once at module scope with donate_argnums=(0,).
    raise NotImplementedError("swap_halves")


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x, correct even when x_ref and o_ref are one buffer."""
    # TODO: the second line reads x_ref after the first wrote o_ref. Fix it.
    o_ref[...] = jnp.tanh(x_ref[...])
    o_ref[...] += x_ref[...]


def residual_tanh(x: jax.Array) -> jax.Array:
    """`residual_tanh_kernel` aliased onto x, jitted once, donating x (as for `swap_halves`)."""
    # TODO: as for swap_halves.
    raise NotImplementedError("residual_tanh")
