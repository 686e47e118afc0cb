"""Scans over the layers but applies each one to the original x instead of the carry, so only the last layer shows; must fail test_forward_values."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


@jax.jit
def forward(stacked, x):
    """The carry is passed along but never used."""
    out, _ = lax.scan(lambda h, p: (jnp.tanh(x @ p["w"] + p["b"]), None), x, stacked)
    return out
