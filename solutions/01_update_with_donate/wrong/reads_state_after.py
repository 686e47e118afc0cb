"""Reads `state` after donating it (to measure the change), which raises because its buffer is gone; must fail test_no_read_after_donate."""

import jax
import jax.numpy as jnp

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    """Return `state + delta`, after checking the change against the old `state`."""
    new_state = _add(state, delta)
    change = jnp.max(jnp.abs(new_state - state))
    if not jnp.isfinite(change):
        raise FloatingPointError("the update is not finite")
    return new_state
