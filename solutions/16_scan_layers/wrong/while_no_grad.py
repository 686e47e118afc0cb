"""Loops over the layers with `lax.while_loop`, which has no reverse-mode derivative, so jax.grad of forward raises; must fail test_grads_flow."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers):
    """Stack each parameter on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack(a), *layers)


@jax.jit
def forward(stacked, x):
    """A while loop with a counter in its carry."""
    n = stacked["w"].shape[0]

    def body(state):
        i, h = state
        return i + 1, jnp.tanh(h @ stacked["w"][i] + stacked["b"][i])

    _, out = lax.while_loop(lambda s: s[0] < n, body, (0, x))
    return out
