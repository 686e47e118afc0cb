"""Sums the microbatch losses and gradients but never divides by num_micro, so they are num_micro times too large; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """The sums, returned as they are."""
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        loss, grads = jax.value_and_grad(_loss)(params, mb["x"], mb["y"])
        return jax.tree.map(jnp.add, carry, (loss, grads)), None

    init = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
    return lax.scan(step, init, micro)[0]
