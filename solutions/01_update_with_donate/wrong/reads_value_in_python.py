"""Picks its jit by a value read back to Python (`float(delta.sum())`), a device sync and a new jit on every call; must fail test_helper_built_once."""

import functools

import jax
import jax.numpy as jnp


@functools.cache
def _helper(key):
    """One donating jit per distinct key."""
    return jax.jit(jnp.add, donate_argnums=0)


def update_with_donate(state, delta):
    """Reads a value of `delta` before the call: each new value builds (and compiles) another jit."""
    return _helper(float(delta.sum()))(state, delta)
