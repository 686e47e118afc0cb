"""Keeps only the last microbatch's loss in the carry instead of summing the losses, so the loss is one microbatch's; must fail test_values."""

import functools

import jax
import jax.numpy as jnp


def loss_fn(params, x, y):
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    xs = batch["x"].reshape(num_micro, -1, 64)
    ys = batch["y"].reshape(num_micro, -1)

    def step(carry, xy):
        loss, g = jax.value_and_grad(loss_fn)(params, *xy)
        return (loss, jax.tree.map(jnp.add, carry[1], g)), None

    (loss, grads), _ = jax.lax.scan(step, (0.0, jax.tree.map(jnp.zeros_like, params)), (xs, ys))
    return loss, jax.tree.map(lambda g: g / num_micro, grads)
