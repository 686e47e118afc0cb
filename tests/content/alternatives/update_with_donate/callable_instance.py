"""A correct `update_with_donate` that is itself an object: a callable instance whose jit wraps a static method."""

import jax


class Updater:
    """Builds its donating jit once, when the module makes the one instance."""

    def __init__(self):
        self._step = jax.jit(self._add, donate_argnums=0)

    @staticmethod
    def _add(state, delta):
        return state + delta

    def __call__(self, state, delta):
        return self._step(state, delta)


update_with_donate = Updater()
