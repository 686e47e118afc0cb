"""A correct `update_with_donate` that hands its donating jit a Python scalar beside the arrays: `1.0 * delta`.

The judge runs the programs a call ran again on fresh inputs (`course.grading.rerun`); a Python scalar a program was
given is taken as the call had it, so this file's program runs there as it ran here.
"""

import jax


class _Stepper:
    """Holds the donating jit, built once."""

    def __init__(self):
        self._step = jax.jit(lambda s, d, k: s + k * d, donate_argnums=0)

    def __call__(self, state, delta):
        return self._step(state, delta, 1.0)


update_with_donate = _Stepper()
