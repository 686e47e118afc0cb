"""Runs the scan with `reverse=True`, thinking of the backward pass, so the forward pass applies layer L-1 first and layer 0 last; must fail test_values_loss_and_grads."""

import jax
import jax.numpy as jnp
from jax import lax


def _make(policy):
    @jax.jit
    def run(params, x):
        body = jax.checkpoint(lambda h, p: (h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"], None), policy=policy)

        def loss(params):
            out, _ = lax.scan(body, x, params, reverse=True)
            return jnp.mean(out ** 2)

        return jax.value_and_grad(loss)(params)

    return run


loss_and_grads = _make(jax.checkpoint_policies.dots_saveable)
loss_and_grads_min_memory = _make(jax.checkpoint_policies.nothing_saveable)
