"""update_with_donate whose sum NumPy makes, while a donating jit runs beside it only to give `state` up.

Every fact the judge reads of the call is true: `state` is consumed, a jitted program of the learner's donates it
and writes an output into its buffer, it compiles once per shape, and the returned values are right. But the
result is a fresh array NumPy made, and the donated buffer holds zeros nobody reads: the donation saves nothing.
The judge runs the programs the call ran on fresh inputs of its own and finds no program that made the result
(`test_values`).
"""

import jax
import jax.numpy as jnp
import numpy as np

_give_up = jax.jit(lambda state, delta: state * 0.0 + delta * 0.0, donate_argnums=(0,))


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """`state + delta` made by NumPy; `state` donated to a program whose output is dropped."""
    total = np.asarray(state) + np.asarray(delta)
    _give_up(state, delta)
    return jnp.asarray(total)
