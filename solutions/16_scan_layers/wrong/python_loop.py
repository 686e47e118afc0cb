"""Loops over the layers in Python inside the jit, so every layer is written out at trace time; must fail test_one_loop_over_layers."""

import jax
import jax.numpy as jnp


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return {k: jnp.stack([layer[k] for layer in layers]) for k in ("w", "b")}


@jax.jit
def forward(stacked, x):
    """One traced copy of the layer per layer."""
    for layer in range(stacked["w"].shape[0]):
        x = jnp.tanh(x @ stacked["w"][layer] + stacked["b"][layer])
    return x
