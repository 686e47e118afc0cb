"""Returns the sum as float16, a different dtype, which also drops the donation without a warning; must fail test_dtype_and_shape."""

import jax
import jax.numpy as jnp

_add = jax.jit(lambda state, delta: (state + delta).astype(jnp.float16), donate_argnums=(0,))


def update_with_donate(state, delta):
    """Return `state + delta` in half precision."""
    return _add(state, delta)
