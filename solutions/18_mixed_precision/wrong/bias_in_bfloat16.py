"""Adds b1 in bfloat16 (`dense(x, w1).astype(bfloat16) + b1.astype(bfloat16)`) and takes tanh of that, rounding the hidden pre-activations too, where only the matmul operands may be rounded; must fail test_loss_values."""

import jax
import jax.numpy as jnp

BF16 = jnp.bfloat16


def dense(x, w):
    return jnp.dot(x.astype(BF16), w.astype(BF16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    h = jnp.tanh(dense(batch["x"], params["w1"]).astype(BF16) + params["b1"].astype(BF16))
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
