"""Exercise `mixed_precision`: matmuls on bfloat16 operands with float32 results, and float32 master weights.

Run `course show mixed_precision` for the lesson, and `course check` to grade this file.
"""

import jax
import jax.numpy as jnp

# params = {"w1": (64, 128), "b1": (128,), "w2": (128, 8), "b2": (8,)} float32
# batch = {"x": (256, 64), "y": (256, 8)} float32


def dense(x: jax.Array, w: jax.Array) -> jax.Array:
    """x @ w for float32 x (B, K) and w (K, N): both operands rounded to bfloat16, the product float32 (B, N)."""
    # TODO: a bfloat16 x bfloat16 matmul whose result stays float32.
    raise NotImplementedError("dense is not written yet")


def loss_fn(params: dict, batch: dict) -> jax.Array:
    """mean((dense(tanh(dense(x, w1) + b1), w2) + b2 - y) ** 2), a float32 scalar.

    Only the matmul operands are rounded to bfloat16; the biases, tanh and the mean stay float32.
    """
    # TODO: the two layers through `dense`, the rest in float32.
    raise NotImplementedError("loss_fn is not written yet")


# TODO: jit it.
def train_step(params: dict, batch: dict, lr: float) -> tuple[dict, jax.Array]:
    """One SGD step on the float32 master weights: (new params, loss_fn of the params given)."""
    # TODO: value and gradient of loss_fn, then p - lr * g in float32.
    raise NotImplementedError("train_step is not written yet")
