"""Copies `state` before donating it, so only the copy is consumed and the caller's buffer survives; must fail test_no_copy_before_donate."""

import jax
import jax.numpy as jnp

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    """Return `state + delta`, but donate a fresh copy of `state`."""
    return _add(jnp.array(state), delta)
