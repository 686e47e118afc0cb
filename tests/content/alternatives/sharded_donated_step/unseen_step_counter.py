"""sgd_step written apart from the reference: the jitted update also takes a step counter that it never
reads (kept for a schedule to come), so JAX leaves that input out of the compiled program."""

from functools import partial

import jax
import jax.numpy as jnp

_STEP = jnp.zeros((), jnp.int32)


@partial(jax.jit, donate_argnums=(0,))
def _update(params, grads, lr, step):
    """Plain SGD on every leaf; `step` is accepted and unused."""
    del step
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def sgd_step(params, grads, lr):
    """One step at the current step count."""
    return _update(params, grads, lr, _STEP)
