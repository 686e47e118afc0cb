"""Stores the master weights in bfloat16, where small updates round away or to whole steps; must fail test_master_weights_float32."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """bf16 operands, f32 result."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


@jax.jit
def train_step(params, batch, lr):
    """Casts the params to bfloat16 once and keeps them so."""
    params = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss.astype(jnp.float32)
