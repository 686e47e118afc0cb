"""Writes the sum with `state.at[:].set(...)` outside any jit, taking the functional update for an in-place one, so nothing is donated and `state` survives; must fail test_state_consumed."""

import jax.numpy as jnp


def update_with_donate(state, delta):
    """Overwrite `state` with `state + delta` "in place"."""
    return state.at[:].set(jnp.add(state, delta))
