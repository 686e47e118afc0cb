"""Names the matmul output "hiden" but saves "hidden", so the policy silently saves nothing and x @ w1 is recomputed; must fail test_no_matmul_recomputed."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name


def _layer(h, p):
    """The residual block, its matmul output named."""
    z = checkpoint_name(h @ p["w1"], "hiden")
    return h + jax.nn.gelu(z + p["b1"]) @ p["w2"], None


def _vg(policy):
    """value_and_grad of the checkpointed scan."""
    step = jax.checkpoint(_layer, policy=policy)
    return jax.jit(jax.value_and_grad(lambda params, x: jnp.mean(lax.scan(step, x, params)[0] ** 2)))


loss_and_grads = _vg(jax.checkpoint_policies.save_only_these_names("hidden"))
loss_and_grads_min_memory = _vg(jax.checkpoint_policies.nothing_saveable)
