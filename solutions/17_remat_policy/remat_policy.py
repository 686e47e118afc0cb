"""Reference solution of `remat_policy`."""

import jax


def remat_policy(x: jax.Array) -> jax.Array:
    """TODO(course new): what `remat_policy` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
