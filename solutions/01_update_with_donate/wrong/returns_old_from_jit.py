"""Has the donating jit return the old `state` beside the new one and keeps it, so XLA copies the donated buffer; must fail test_no_copy_before_donate."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=(0,))
def _step(state, delta):
    """The new state, and the old one for the caller's records."""
    return state + delta, state


history = []


def update_with_donate(state, delta):
    """Return `state + delta`; remember the previous state."""
    new_state, old_state = _step(state, delta)
    history[:] = [old_state]
    return new_state
