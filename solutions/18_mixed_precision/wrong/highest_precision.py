"""Asks for precision=HIGHEST instead of a float32 result, which leaves the product in bfloat16; must fail test_dense_dtypes."""

import jax
import jax.numpy as jnp
from jax import lax


def dense(x, w):
    """HIGHEST precision does not change the output dtype."""
    out = lax.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), precision=lax.Precision.HIGHEST)
    return out.astype(jnp.float32)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
