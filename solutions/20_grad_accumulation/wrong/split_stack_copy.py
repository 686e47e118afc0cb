"""Splits the batch with jnp.split and stacks the pieces again, which copies the whole batch before the loop, so memory grows with the batch; must fail test_memory_scales_with_microbatch."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """The right loop and sums, over a stacked copy of the batch."""
    xs = jnp.stack(jnp.split(batch["x"], num_micro))
    ys = jnp.stack(jnp.split(batch["y"], num_micro))

    def step(carry, xy):
        return jax.tree.map(jnp.add, carry, jax.value_and_grad(_loss)(params, *xy)), None

    loss, grads = lax.scan(step, (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params)), (xs, ys))[0]
    return loss / num_micro, jax.tree.map(lambda g: g / num_micro, grads)
