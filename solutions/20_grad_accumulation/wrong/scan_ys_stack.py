"""Scans over the microbatches but returns each gradient as a per-step output and averages the stack afterwards; must fail test_memory_scales_with_microbatch."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """The carry is unused; the stacked ys hold every gradient."""
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        return carry, jax.value_and_grad(_loss)(params, mb["x"], mb["y"])

    _, (losses, grads) = lax.scan(step, 0.0, micro)
    return jnp.mean(losses), jax.tree.map(lambda g: jnp.mean(g, axis=0), grads)
