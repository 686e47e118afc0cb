"""Exercise `scan_layers`: a deep stack of tanh layers run by one `lax.scan`, so the program stays one layer long.

Run `course show scan_layers` for the lesson, and `course check` to grade this file.
"""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers: list[dict]) -> dict:
    """Turn a list of L layers `{"w": (D, D), "b": (D,)}` into `{"w": (L, D, D), "b": (L, D)}`.

    Layer l of the list is entry l along the new leading axis.
    """
    # TODO: stack each parameter of the layers on a new leading axis.
    raise NotImplementedError("stack_layers is not written yet")


# TODO: jit `forward` once, at module scope (a decorator or an assignment).
def forward(stacked: dict, x: jax.Array) -> jax.Array:
    """Apply the layers in order, `x = tanh(x @ w[l] + b[l])` for l = 0..L-1, to x float32 (B, D).

    One `lax.scan` (or `lax.fori_loop` with Python-int bounds) over the stacked layers, the
    activation as its carry; the result must be differentiable with `jax.grad`.
    """
    # TODO: a loop of L trips over the stacked layers, not a Python loop.
    raise NotImplementedError("forward is not written yet")
