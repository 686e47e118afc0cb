"""Scans with reverse=True, so the last layer runs first; must fail test_forward_values."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


@jax.jit
def forward(stacked, x):
    """The layers from the end."""
    out, _ = lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), x, stacked, reverse=True)
    return out
