"""Deletes `state` by hand after a jit that donates nothing (skipping it while JAX traces, where a tracer
cannot be deleted): the array is gone, but its buffer was never reused and the result took a new one;
must fail test_state_consumed."""

import jax

_add = jax.jit(lambda state, delta: state + delta)


def update_with_donate(state, delta):
    """Return `state + delta`, then free `state` as if it had been donated."""
    out = _add(state, delta)
    if not isinstance(state, jax.core.Tracer):
        state.delete()
    return out
