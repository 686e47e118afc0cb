"""Wraps the layer in jax.checkpoint but scans the unwrapped layer, so nothing is checkpointed; must fail test_memory_budget_loss_and_grads."""

import jax
import jax.numpy as jnp
from jax import lax


def layer(x, p):
    return x + jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"]


def make(policy):
    ckpt_layer = jax.checkpoint(layer, policy=policy)

    def loss(params, x):
        y, _ = lax.scan(lambda h, p: (layer(h, p), None), x, params)
        return jnp.mean(y ** 2)
    return jax.jit(jax.value_and_grad(loss))


loss_and_grads = make(jax.checkpoint_policies.dots_saveable)
loss_and_grads_min_memory = make(jax.checkpoint_policies.nothing_saveable)
