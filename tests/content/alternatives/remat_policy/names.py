"""The matmul output named with `checkpoint_name` and kept by `save_only_these_names`; jits made by a factory."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name


def _layer(x, p):
    """The residual block with its first matmul's output named."""
    z = checkpoint_name(x @ p["w1"], "z")
    return x + jax.nn.gelu(z + p["b1"]) @ p["w2"]


def _make(policy):
    """A jitted value_and_grad whose scan body saves what `policy` says."""
    def loss(params, x):
        step = jax.checkpoint(lambda h, p: (_layer(h, p), None), policy=policy)
        return jnp.mean(lax.scan(step, x, params)[0] ** 2)

    return jax.jit(jax.value_and_grad(loss))


loss_and_grads = _make(jax.checkpoint_policies.save_only_these_names("z"))
loss_and_grads_min_memory = _make(jax.checkpoint_policies.nothing_saveable)
