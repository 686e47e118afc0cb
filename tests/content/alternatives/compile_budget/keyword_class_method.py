"""A correct `scaled_softmax`: an object jits its own method once, in its constructor, and is called by keyword."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """16 rows at least, else the next power of two."""
    return 16 if n <= 16 else 1 << (n - 1).bit_length()


class SoftmaxServer:
    """Serves batches of any size from one program per bucket."""

    def __init__(self, width):
        self.width = width
        self._forward = jax.jit(self.forward)

    def forward(self, logits, temperature):
        return jax.nn.softmax(logits / temperature, axis=-1)

    def __call__(self, x, temperature):
        n = x.shape[0]
        rows = bucket_size(n)
        padded = jnp.zeros((rows, self.width), x.dtype).at[:n].set(x)
        out = self._forward(logits=padded, temperature=jnp.asarray(temperature, dtype=jnp.float32))
        return out[:n]


_SERVER = SoftmaxServer(width=64)


def scaled_softmax(x, temperature):
    """softmax(x / temperature) for a batch of any number of rows."""
    return _SERVER(x, temperature=temperature)
