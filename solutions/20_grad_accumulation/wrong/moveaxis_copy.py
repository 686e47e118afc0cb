"""Reshapes the batch to (rows per microbatch, num_micro, ...) and moves the microbatch axis to the front with `jnp.moveaxis`: a transposed copy of the whole batch (and microbatches of strided rows, not consecutive ones); must fail test_memory_scales_with_microbatch."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnums=2)
def accumulated_grads(params, batch, num_micro):
    rows = batch["x"].shape[0] // num_micro
    x = jnp.moveaxis(batch["x"].reshape(rows, num_micro, -1), 1, 0)
    y = jnp.moveaxis(batch["y"].reshape(rows, num_micro), 1, 0)

    def step(carry, xy):
        loss, grads = jax.value_and_grad(_loss)(params, *xy)
        return jax.tree.map(jnp.add, carry, (loss, grads)), None

    start = (jnp.float32(0), jax.tree.map(jnp.zeros_like, params))
    (loss, grads), _ = lax.scan(step, start, (x, y))
    return loss / num_micro, jax.tree.map(lambda g: g / num_micro, grads)
