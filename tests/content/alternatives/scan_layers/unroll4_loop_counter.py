"""A scan over layer indices 0..L-1 with `jnp.arange` as xs and dynamic indexing, unroll=4, jitted by decorator."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    ws, bs = zip(*[(layer["w"], layer["b"]) for layer in layers], strict=True)
    return dict(w=jnp.stack(ws), b=jnp.stack(bs))


@jax.jit
def forward(stacked, x):
    n_layers = stacked["w"].shape[0]

    def step(h, i):
        w = lax.dynamic_index_in_dim(stacked["w"], i, keepdims=False)
        b = lax.dynamic_index_in_dim(stacked["b"], i, keepdims=False)
        return jnp.tanh(h @ w + b), None

    h, _ = lax.scan(step, x, jnp.arange(n_layers), unroll=4)
    return h
