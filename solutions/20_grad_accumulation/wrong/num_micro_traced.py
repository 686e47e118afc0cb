"""Jits `accumulated_grads` without making num_micro static, so it arrives traced and cannot shape the reshape or bound the loop; must fail test_values."""

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@jax.jit
def accumulated_grads(params, batch, num_micro):
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        loss, grads = jax.value_and_grad(_loss)(params, mb["x"], mb["y"])
        return (carry[0] + loss, jax.tree.map(jnp.add, carry[1], grads)), None

    start = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
    (loss, grads), _ = lax.scan(step, start, micro)
    return loss / num_micro, jax.tree.map(lambda g: g / num_micro, grads)
