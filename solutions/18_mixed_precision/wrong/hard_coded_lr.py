"""Ignores the `lr` argument and always steps with 1e-3 (the usual value), so any other learning rate is not honoured; must fail test_step_follows_lr."""

import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3


def dense(x, w):
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss
