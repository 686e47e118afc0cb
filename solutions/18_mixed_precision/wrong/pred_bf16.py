"""Keeps the prediction in bfloat16 (the bias added in bf16), rounding more than the matmul operands; must fail test_loss_values."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """bf16 operands, f32 result."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """The output layer's sum is done in bfloat16 before the float32 error."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    pred = dense(h, params["w2"]).astype(jnp.bfloat16) + params["b2"].astype(jnp.bfloat16)
    return jnp.mean((pred.astype(jnp.float32) - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """SGD in float32."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
