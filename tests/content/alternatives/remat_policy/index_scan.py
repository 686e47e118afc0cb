"""remat_policy written apart from the reference: the scan runs over layer numbers and reads each layer's
weights with `lax.dynamic_index_in_dim` from the params it closes over; the checkpoint is a decorator."""

import functools

import jax
import jax.numpy as jnp
from jax import lax

L = 16


def _loss_with(policy):
    """The loss of the stacked layers, the body of its scan checkpointed with `policy`."""

    def loss(params, x):
        @functools.partial(jax.checkpoint, policy=policy)
        def step(h, i):
            w1, b1, w2 = (lax.dynamic_index_in_dim(params[k], i, keepdims=False) for k in ("w1", "b1", "w2"))
            z = jnp.dot(h, w1) + b1
            return h + jnp.dot(jax.nn.gelu(z), w2), None

        out, _ = lax.scan(step, x, jnp.arange(params["w1"].shape[0]))
        return jnp.mean(out * out)

    return loss


@jax.jit
def loss_and_grads(params, x):
    """Saves each layer's input and its first matmul's output."""
    return jax.value_and_grad(_loss_with(jax.checkpoint_policies.dots_saveable))(params, x)


@jax.jit
def loss_and_grads_min_memory(params, x):
    """Saves each layer's input only."""
    return jax.value_and_grad(_loss_with(jax.checkpoint_policies.nothing_saveable))(params, x)
