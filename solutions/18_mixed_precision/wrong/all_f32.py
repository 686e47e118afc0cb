"""Never casts to bfloat16: every matmul runs on float32 operands; must fail test_dense_values."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """A plain float32 matmul."""
    return x @ w


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
