"""Reports the bf16 loss but takes the gradient of a separate float32 loss, so the backward matmuls are f32 x f32; must fail test_train_step_matmuls."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """bf16 operands, f32 result."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


def _f32_loss(params, batch):
    """The same model in float32, "for a cleaner gradient"."""
    h = jnp.tanh(batch["x"] @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """The loss of one function, the gradient of another."""
    grads = jax.grad(_f32_loss)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss_fn(params, batch)
