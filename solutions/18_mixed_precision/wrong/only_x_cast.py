"""Casts only x to bfloat16, so x_bf16 @ w_f32 is promoted back to a float32 matmul; must fail test_dense_values."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """The weights stay float32, so the product is promoted to float32."""
    return jnp.matmul(x.astype(jnp.bfloat16), w)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
