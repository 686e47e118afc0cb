"""Gives each function the other's policy: `loss_and_grads` saves only the layer inputs, so its backward pass recomputes the first matmul, and `loss_and_grads_min_memory` keeps the matmul outputs too; must fail test_no_matmul_recomputed."""

import jax
import jax.numpy as jnp
from jax import lax

_SAVE_DOTS = jax.checkpoint_policies.dots_saveable
_SAVE_NOTHING = jax.checkpoint_policies.nothing_saveable


def _loss(policy):
    def body(h, p):
        return h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"], None

    def loss(params, x):
        out, _ = lax.scan(jax.checkpoint(body, policy=policy), x, params)
        return jnp.mean(out ** 2)

    return jax.value_and_grad(loss)


loss_and_grads = jax.jit(_loss(_SAVE_NOTHING))
loss_and_grads_min_memory = jax.jit(_loss(_SAVE_DOTS))
