"""Passes a call counter as a static argument, so every call is a new program to compile; must fail test_helper_built_once."""
import functools

import jax
import jax.numpy as jnp

_n = [0]


@functools.partial(jax.jit, donate_argnums=0, static_argnums=2)
def _add(state, delta, k):
    return state + delta + jnp.zeros_like(state) * k


def update_with_donate(state, delta):
    _n[0] += 1
    return _add(state, delta, _n[0])
