"""An `update_with_donate` that compiles a new program on every call (a static argument that changes each
time, and shows in the program as a constant), and after its first call renames JAX's compile event so that
no listener counts it: every later call compiles, unseen. Its values and donation are right. The compile
count is reported by the process that runs this file; the programs' texts are not."""

import functools

import jax
import jax.numpy as jnp
from jax._src import dispatch

_calls = [0]
# Each import (a check that counts compiles imports the file afresh) starts with compiles seen again.
dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@functools.partial(jax.jit, donate_argnums=0, static_argnums=2)
def _add(state, delta, k):
    """state + delta, plus k times zero: the same values, a new program for every k."""
    return state + delta + jnp.full_like(state, k) * 0.0


def update_with_donate(state, delta):
    """Add, with a new k each call; from the second call on, compiles go unreported."""
    _calls[0] += 1
    if _calls[0] > 1:
        dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/nothing_to_see"
    return _add(state, delta, _calls[0])
