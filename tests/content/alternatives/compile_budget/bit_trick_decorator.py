"""A correct `scaled_softmax` with a bit trick for the bucket and a decorated jit taking the temperature as float32."""

import jax
import jax.numpy as jnp
import numpy as np


def bucket_size(n: int) -> int:
    """Smear the bits of n - 1 to the right and add one: the next power of two; 16 at least."""
    v = n - 1
    for shift in (1, 2, 4, 8, 16):
        v |= v >> shift
    return max(v + 1, 16)


@jax.jit
def softmax_padded(x, temperature):
    """softmax(x / temperature) row by row, on the padded batch."""
    logits = x / temperature
    return jnp.exp(logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True))


def scaled_softmax(x, temperature):
    """Pad with zeros to the bucket, run, slice."""
    n = x.shape[0]
    pad = bucket_size(n) - n
    t = jnp.float32(np.float32(temperature))
    return softmax_padded(jnp.pad(x, ((0, pad), (0, 0))), t)[0:n]
