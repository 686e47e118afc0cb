"""Scans over the layers with unroll=True, which keeps the jaxpr small but hands XLA every layer written out; must fail test_compiled_size_constant."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


@jax.jit
def forward(stacked, x):
    """A scan, fully unrolled."""
    out, _ = lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), x, stacked, unroll=True)
    return out
