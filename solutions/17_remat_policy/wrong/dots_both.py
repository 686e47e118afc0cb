"""Uses dots_saveable for both functions, so the min-memory one still keeps every (B, H) matmul output; must fail test_memory_budget_min_memory."""

import jax
import jax.numpy as jnp
from jax import lax


def _vg(policy):
    """value_and_grad of the checkpointed scan."""
    step = jax.checkpoint(lambda h, p: (h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"], None), policy=policy)
    return jax.jit(jax.value_and_grad(lambda params, x: jnp.mean(lax.scan(step, x, params)[0] ** 2)))


loss_and_grads = _vg(jax.checkpoint_policies.dots_saveable)
loss_and_grads_min_memory = _vg(jax.checkpoint_policies.dots_saveable)
