"""Exercise `compile_budget`: a softmax that compiles a handful of programs, whatever sizes and temperatures it meets.

Run `course show compile_budget` for the lesson, and `course check` to grade this file.
"""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The number of rows a batch of `n` rows (1 <= n <= 1024) is padded to."""
    # TODO: a power of two, at least n and less than 2n (a floor such as 16 is fine).
    raise NotImplementedError("bucket_size is not written yet")


def scaled_softmax(x: jax.Array, temperature) -> jax.Array:
    """softmax(x / temperature, axis=-1) for float32 x of shape (n, 64), computed on x padded to `bucket_size(n)` rows.

    `temperature` > 0 may be a Python float or int, a NumPy scalar or a 0-d array.
    """
    # TODO: pad, call a jitted function built once at module scope, slice the padding off.
    raise NotImplementedError("scaled_softmax is not written yet")
