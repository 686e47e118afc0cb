"""Reference solution of `ring_allreduce`."""

import jax


def ring_allreduce(x: jax.Array) -> jax.Array:
    """TODO(course new): what `ring_allreduce` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
