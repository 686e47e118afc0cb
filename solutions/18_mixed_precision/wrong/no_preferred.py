"""Multiplies bfloat16 by bfloat16 without preferred_element_type, so the product is rounded to bfloat16; must fail test_dense_dtypes."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """The bf16 result, cast back to float32 afterwards: its low bits are already gone."""
    return (x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)).astype(jnp.float32)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
