"""Adds the scaled gradient to the params (`p + lr * g`), a step uphill, so the loss grows; must fail test_small_updates_kept."""

import jax
import jax.numpy as jnp


def dense(x, w):
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p + lr * g, params, grads), loss
