"""A small model object holding its jitted apply; forward delegates to it, with ys collected and dropped."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def stack_layers(layers):
    stacked = {}
    for key in ("w", "b"):
        stacked[key] = jnp.asarray(np.stack([np.asarray(layer[key]) for layer in layers]))
    return stacked


class Deep:
    """Owns the compiled forward pass."""

    def __init__(self):
        self.apply = jax.jit(self._apply)

    @staticmethod
    def _apply(stacked, x):
        def layer(h, p):
            h = jnp.tanh(lax.dot_general(h, p["w"], (((1,), (0,)), ((), ()))) + p["b"])
            return h, h.sum()

        h, _norms = lax.scan(layer, x, stacked)
        return h


_model = Deep()


def forward(stacked, x):
    return _model.apply(stacked, x)
