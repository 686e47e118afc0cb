"""Builds the jax.jit wrapper inside the function, so every call traces and compiles anew; must fail test_helper_built_once."""

import jax


def update_with_donate(state, delta):
    """Return `state + delta` through a jitted helper that is rebuilt on each call."""
    add = jax.jit(lambda s, d: s + d, donate_argnums=(0,))
    return add(state, delta)
