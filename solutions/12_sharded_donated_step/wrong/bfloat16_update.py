"""Returns the new params in bfloat16, which no float32 buffer can hold, so the donation is silently dropped; must fail test_alias_bytes."""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, donate_argnums=0)
def sgd_step(params, grads, lr):
    """A cheaper update, in bfloat16."""
    return {k: (params[k] - lr * grads[k]).astype(jnp.bfloat16) for k in params}
