"""Builds `jax.jit` of a fresh inner function on every call, so every call traces and compiles again; must fail test_compiles_once."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


def forward(stacked, x):
    """A scan, jitted anew each time."""
    def run(stacked, x):
        return lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), x, stacked)[0]

    return jax.jit(run)(stacked, x)
