"""Loops over the microbatches in Python inside the jit, so every microbatch's forward and backward pass is written out; must fail test_loop_over_microbatches."""

import functools

import jax
import jax.numpy as jnp


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """A running sum over a Python loop."""
    size = batch["x"].shape[0] // num_micro
    loss_sum, grad_sum = 0.0, jax.tree.map(jnp.zeros_like, params)
    for m in range(num_micro):
        rows = slice(m * size, (m + 1) * size)
        loss, grads = jax.value_and_grad(_loss)(params, batch["x"][rows], batch["y"][rows])
        loss_sum = loss_sum + loss
        grad_sum = jax.tree.map(jnp.add, grad_sum, grads)
    return loss_sum / num_micro, jax.tree.map(lambda g: g / num_micro, grad_sum)
