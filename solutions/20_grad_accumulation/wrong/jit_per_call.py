"""Builds the jit of a fresh closure over num_micro on every call, so every new batch compiles again; must fail test_compiles_once."""

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one microbatch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


def accumulated_grads(params, batch, num_micro):
    """A new jitted closure per call."""
    def run(params, batch):
        micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

        def step(carry, mb):
            return jax.tree.map(jnp.add, carry, jax.value_and_grad(_loss)(params, mb["x"], mb["y"])), None

        loss, grads = lax.scan(step, (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params)), micro)[0]
        return loss / num_micro, jax.tree.map(lambda g: g / num_micro, grads)

    return jax.jit(run)(params, batch)
