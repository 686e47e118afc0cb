"""Mixed precision: TODO(course new) one line saying what the learner writes."""

import jax


def mixed_precision(x: jax.Array) -> jax.Array:
    """TODO(course new): what `mixed_precision` returns."""
    # TODO: write this function.
    raise NotImplementedError("`mixed_precision` is not written yet")
