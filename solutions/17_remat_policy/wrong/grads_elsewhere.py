"""Takes the loss from the checkpointed scan but the gradients from a separate plain one, so the forward pass runs twice and nothing is saved less; must fail test_no_matmul_recomputed."""

import jax
import jax.numpy as jnp
from jax import lax


def _block(h, p):
    """The residual block as a scan step."""
    return h + jax.nn.gelu(h @ p["w1"] + p["b1"]) @ p["w2"], None


def _loss(step):
    """The mean square of the layers scanned with step."""
    return lambda params, x: jnp.mean(lax.scan(step, x, params)[0] ** 2)


_plain_grad = jax.grad(_loss(_block))


@jax.jit
def loss_and_grads(params, x):
    """Loss from the checkpointed scan, grads from the plain one."""
    loss = _loss(jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable))(params, x)
    return loss, _plain_grad(params, x)


@jax.jit
def loss_and_grads_min_memory(params, x):
    """The same, with nothing saved in the first scan."""
    return _loss(jax.checkpoint(_block))(params, x), _plain_grad(params, x)
