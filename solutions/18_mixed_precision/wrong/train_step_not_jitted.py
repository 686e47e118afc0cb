"""Leaves train_step unjitted, so every call runs op by op, one small program per operation; must fail test_train_step_jitted."""

import jax
import jax.numpy as jnp


def dense(x: jax.Array, w: jax.Array) -> jax.Array:
    """x @ w with both operands rounded to bfloat16 and the product kept in float32."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params: dict, batch: dict) -> jax.Array:
    """The mean squared error of a two-layer tanh network whose matmuls run on bfloat16 operands."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    pred = dense(h, params["w2"]) + params["b2"]
    return jnp.mean((pred - batch["y"]) ** 2)


def train_step(params: dict, batch: dict, lr: float) -> tuple[dict, jax.Array]:
    """One SGD step on the float32 master weights; returns the new params and the loss before the step."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
