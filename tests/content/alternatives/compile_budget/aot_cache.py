"""A correct `scaled_softmax` that compiles ahead of time, once per bucket, and looks buckets up in a table."""

from bisect import bisect_left

import jax
import jax.numpy as jnp
import numpy as np

BUCKETS = (16, 32, 64, 128, 256, 512, 1024)
_compiled = {}


def bucket_size(n: int) -> int:
    """The first bucket of the table that holds n rows."""
    return BUCKETS[bisect_left(BUCKETS, n)]


def _softmax(x, inv_t):
    """Numerically stable softmax of x * inv_t, written out."""
    z = x * inv_t
    z = z - z.max(axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _executable(rows: int, width: int):
    """`jit(_softmax).lower(...).compile()` for one bucket, kept for every later call."""
    key = (rows, width)
    if key not in _compiled:
        spec = jax.ShapeDtypeStruct((rows, width), jnp.float32)
        _compiled[key] = jax.jit(_softmax).lower(spec, jax.ShapeDtypeStruct((), jnp.float32)).compile()
    return _compiled[key]


def scaled_softmax(x, temperature):
    """Copy x into a zero batch of its bucket's size, run the bucket's executable, keep the real rows."""
    n, width = x.shape
    rows = bucket_size(n)
    padded = jnp.zeros((rows, width), jnp.float32).at[:n].set(x)
    inv_t = np.float32(1.0) / np.float32(np.asarray(temperature))
    return _executable(rows, width)(padded, inv_t)[:n]
