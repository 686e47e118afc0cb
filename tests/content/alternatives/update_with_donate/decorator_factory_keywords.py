"""A correct `update_with_donate` decorated by the `jax.jit(...)` factory, donating by name, called by keyword."""

import jax


@jax.jit(donate_argnames="old")
def _apply(old, step):
    """The update: the old state plus the step."""
    return old + step


def update_with_donate(state, delta):
    """Return `state + delta`; `state` goes in under the donated name."""
    return _apply(step=delta, old=state)
