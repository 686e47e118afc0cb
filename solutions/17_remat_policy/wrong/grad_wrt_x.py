"""Differentiates with respect to the input (`argnums=1`) instead of the params, so the "grads" are one array shaped like x; must fail test_values_loss_and_grads."""

import jax
import jax.numpy as jnp
from jax import lax


def _layer(h, p):
    return h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"]


def _loss(policy):
    body = jax.checkpoint(lambda h, p: (_layer(h, p), None), policy=policy)

    def loss(params, x):
        out, _ = lax.scan(body, x, params)
        return jnp.mean(out ** 2)

    return loss


loss_and_grads = jax.jit(jax.value_and_grad(_loss(jax.checkpoint_policies.dots_saveable), argnums=1))
loss_and_grads_min_memory = jax.jit(jax.value_and_grad(_loss(jax.checkpoint_policies.nothing_saveable), argnums=1))
