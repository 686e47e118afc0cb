"""Stacks the layers with np.stack, which gives NumPy arrays instead of jax.Arrays; must fail test_stack_layers."""

import jax
import jax.numpy as jnp
import numpy as np


def stack_layers(layers):
    return {"w": np.stack([l["w"] for l in layers]), "b": np.stack([l["b"] for l in layers])}


@jax.jit
def forward(stacked, x):
    return jax.lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), x, stacked)[0]
