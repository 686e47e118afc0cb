"""Keeps a backup copy of `state` in a module global before donating it (and guards `delta` with jnp.where); must fail test_no_copy_before_donate."""

import jax
import jax.numpy as jnp

_add = jax.jit(lambda s, d: s + d, donate_argnums=0)
_backup = None  # the last state, in case an update goes wrong


def update_with_donate(state, delta):
    """Back `state` up, drop non-finite steps, then donate `state` to the update."""
    global _backup
    _backup = jnp.copy(state)
    delta = jnp.where(jnp.isfinite(delta), delta, 0.0)
    return _add(state, delta)
