"""Rounds the operands through bfloat16 but multiplies their float32 copies, a full-precision matmul; must fail test_dense_dtypes."""

import jax
import jax.numpy as jnp


def _round(a):
    """a rounded to bfloat16, stored as float32 again."""
    return a.astype(jnp.bfloat16).astype(jnp.float32)


def dense(x, w):
    """The values are right, but the matmul is float32 x float32."""
    return _round(x) @ _round(w)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
