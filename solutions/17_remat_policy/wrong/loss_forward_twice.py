"""Computes the loss in a forward pass of its own and the gradients with `jax.grad`, which runs the layers forward again; must fail test_no_matmul_recomputed."""

import jax
import jax.numpy as jnp
from jax import lax


def _block(x, p):
    return x + jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"]


def _make(policy):
    body = jax.checkpoint(lambda h, p: (_block(h, p), None), policy=policy)

    def loss(params, x):
        out, _ = lax.scan(body, x, params)
        return jnp.mean(out ** 2)

    def both(params, x):
        value = loss(params, x)
        grads = jax.grad(loss)(params, x)
        return value, grads

    return jax.jit(both)


loss_and_grads = _make(jax.checkpoint_policies.dots_saveable)
loss_and_grads_min_memory = _make(jax.checkpoint_policies.nothing_saveable)
