"""A `fori_loop` with Python-int bounds slicing each microbatch with `lax.dynamic_slice_in_dim`; static_argnums."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def mse(params, x, y):
    hidden = jax.nn.gelu(jnp.dot(x, params["w1"]) + params["b1"])
    return jnp.mean(jnp.square(jnp.dot(hidden, params["w2"]) - y))


@functools.partial(jax.jit, static_argnums=2)
def accumulated_grads(params, batch, num_micro):
    size = batch["x"].shape[0] // num_micro

    def body(i, acc):
        x = lax.dynamic_slice_in_dim(batch["x"], i * size, size)
        y = lax.dynamic_slice_in_dim(batch["y"], i * size, size)
        loss, grads = jax.value_and_grad(mse)(params, x, y)
        return acc[0] + loss, jax.tree_util.tree_map(lambda a, g: a + g, acc[1], grads)

    init = (jnp.float32(0.0), jax.tree_util.tree_map(jnp.zeros_like, params))
    loss, grads = lax.fori_loop(0, num_micro, body, init)
    return loss / num_micro, {k: v / num_micro for k, v in grads.items()}
