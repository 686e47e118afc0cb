"""Keeps the running sums in bfloat16, which rounds away the low bits of every gradient added; must fail test_accumulator_float32."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """Sums in bfloat16, cast back at the end."""
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        loss, grads = jax.value_and_grad(_loss)(params, mb["x"], mb["y"])
        loss_sum, grad_sum = carry
        return (loss_sum + loss.astype(jnp.bfloat16),
                jax.tree.map(lambda s, g: s + g.astype(jnp.bfloat16), grad_sum, grads)), None

    init = (jnp.zeros((), jnp.bfloat16), jax.tree.map(lambda p: jnp.zeros(p.shape, jnp.bfloat16), params))
    (loss_sum, grad_sum), _ = lax.scan(step, init, micro)
    return (loss_sum.astype(jnp.float32) / num_micro,
            jax.tree.map(lambda g: g.astype(jnp.float32) / num_micro, grad_sum))
