"""Names the gelu output and saves only that name, but the backward pass needs gelu's input, so x @ w1 is recomputed; must fail test_no_matmul_recomputed."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name


def _layer(h, p):
    """The residual block, its activation named."""
    a = checkpoint_name(jax.nn.gelu(h @ p["w1"] + p["b1"]), "act")
    return h + a @ p["w2"], None


def _vg(policy):
    """value_and_grad of the checkpointed scan."""
    step = jax.checkpoint(_layer, policy=policy)
    return jax.jit(jax.value_and_grad(lambda params, x: jnp.mean(lax.scan(step, x, params)[0] ** 2)))


loss_and_grads = _vg(jax.checkpoint_policies.save_only_these_names("act"))
loss_and_grads_min_memory = _vg(jax.checkpoint_policies.nothing_saveable)
