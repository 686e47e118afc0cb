"""An optimizer-style object that jits its bound method inside `__call__`, so every call builds a new wrapper; must fail test_helper_built_once."""

import jax


class Updater:
    """Applies a step to the state."""

    def _add(self, state, delta):
        return state + delta

    def __call__(self, state, delta):
        step = jax.jit(self._add, donate_argnums=(0,))
        return step(state, delta)


update_with_donate = Updater()
