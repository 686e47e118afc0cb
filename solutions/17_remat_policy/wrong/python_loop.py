"""Checkpoints each layer of a Python loop, which XLA on CPU merges back, so every intermediate is kept; must fail test_memory_budget_loss_and_grads."""

import jax
import jax.numpy as jnp


def _layer(h, w1, b1, w2):
    """The residual block."""
    return h + jax.nn.gelu(h @ w1 + b1) @ w2


def _vg(policy):
    """value_and_grad of L checkpointed layers written out."""
    layer = jax.checkpoint(_layer, policy=policy)

    def loss(params, x):
        for i in range(params["w1"].shape[0]):
            x = layer(x, params["w1"][i], params["b1"][i], params["w2"][i])
        return jnp.mean(x ** 2)

    return jax.jit(jax.value_and_grad(loss))


loss_and_grads = _vg(jax.checkpoint_policies.dots_saveable)
loss_and_grads_min_memory = _vg(jax.checkpoint_policies.nothing_saveable)
