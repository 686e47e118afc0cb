"""A right `update_with_donate` that ends its own process in the first check the executor runs itself ("no read
after donate", found by its name on the stack), after the judge's five checks have had their answers.

Deserved: 5 of 7. The checks that finished keep their verdicts (the judge's five), the check it was in fails
("the grading process ended before reporting"), and the one after it is not run."""

import os
import sys

import jax

_add = jax.jit(lambda s, d: s + d, donate_argnums=0)


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """state + delta, unless the executor's own check is calling."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "test_no_read_after_donate":
            os._exit(0)
        frame = frame.f_back
    return _add(state, delta)
