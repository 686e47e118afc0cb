"""Maps value_and_grad over the microbatches with lax.map, which stacks every microbatch's gradient before the mean; must fail test_memory_scales_with_microbatch."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """A loop, but the gradients pile up as its outputs."""
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)
    losses, grads = lax.map(lambda mb: jax.value_and_grad(_loss)(params, mb["x"], mb["y"]), micro)
    return losses.mean(), jax.tree.map(lambda g: g.mean(axis=0), grads)
