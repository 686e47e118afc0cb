"""Loops `fori_loop(0, num_micro - 1, ...)`, one microbatch short, so the last microbatch's rows never count; must fail test_loop_over_microbatches."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    pred = jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


@functools.partial(jax.jit, static_argnums=2)
def accumulated_grads(params, batch, num_micro):
    """Average value_and_grad over the microbatches, read by index inside the loop."""
    size = batch["x"].shape[0] // num_micro
    xs = batch["x"].reshape(num_micro, size, -1)
    ys = batch["y"].reshape(num_micro, size)

    def body(i, carry):
        total, grads = carry
        loss, g = jax.value_and_grad(_loss)(params, xs[i], ys[i])
        return total + loss, jax.tree.map(lambda a, b: a + b, grads, g)

    start = (jnp.float32(0), jax.tree.map(jnp.zeros_like, params))
    total, grads = lax.fori_loop(0, num_micro - 1, body, start)
    return total / num_micro, jax.tree.map(lambda g: g / num_micro, grads)
