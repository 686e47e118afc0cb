"""Never jits forward, so each call runs the scan op by op instead of one compiled program; must fail test_compiles_once."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


def forward(stacked, x):
    """A scan, run eagerly."""
    return lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), x, stacked)[0]
