"""Scans over the rows of x with a Python loop over the layers inside, so the loop runs B times and every layer is written out; must fail test_one_loop_over_layers."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


@jax.jit
def forward(stacked, x):
    """One row at a time, every layer written out per row."""
    def row(_, r):
        for layer in range(stacked["w"].shape[0]):
            r = jnp.tanh(r @ stacked["w"][layer] + stacked["b"][layer])
        return None, r

    _, out = lax.scan(row, None, x)
    return out
