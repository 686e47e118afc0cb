"""Applies the update in bfloat16 and casts the result back to float32, so small updates round away; must fail test_small_updates_kept."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """bf16 operands, f32 result."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """The spec's loss through dense."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean((dense(h, params["w2"]) + params["b2"] - batch["y"]) ** 2)


def _update(p, g, lr):
    """The subtraction happens in bfloat16; the float32 dtype comes back afterwards."""
    return (p.astype(jnp.bfloat16) - (lr * g).astype(jnp.bfloat16)).astype(jnp.float32)


@jax.jit
def train_step(params, batch, lr):
    """Returns float32 params whose update was rounded to bfloat16."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: _update(p, g, lr), params, grads), loss
