"""Wraps the whole loss, scan included, in jax.checkpoint: the policy cannot see inside the scan, so the backward pass reruns it and saves everything; must fail test_memory_budget_loss_and_grads."""

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x):
    """The mean square of the scanned layers."""
    out, _ = lax.scan(lambda h, p: (h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"], None), x, params)
    return jnp.mean(out ** 2)


loss_and_grads = jax.jit(jax.value_and_grad(jax.checkpoint(_loss, policy=jax.checkpoint_policies.dots_saveable)))
loss_and_grads_min_memory = jax.jit(jax.value_and_grad(jax.checkpoint(_loss)))
