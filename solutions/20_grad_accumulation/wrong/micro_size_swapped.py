"""Splits the batch with reshape(-1, num_micro), making B // num_micro microbatches of num_micro rows: the values are right but the loop runs 512 times; must fail test_loop_over_microbatches."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """Microbatch size and count swapped."""
    micro = jax.tree.map(lambda a: a.reshape(-1, num_micro, *a.shape[1:]), batch)
    count = micro["x"].shape[0]

    def step(carry, mb):
        return jax.tree.map(jnp.add, carry, jax.value_and_grad(_loss)(params, mb["x"], mb["y"])), None

    loss, grads = lax.scan(step, (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params)), micro)[0]
    return loss / count, jax.tree.map(lambda g: g / count, grads)
