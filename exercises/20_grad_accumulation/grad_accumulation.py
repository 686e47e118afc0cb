"""Exercise `grad_accumulation`: the full batch's loss and gradient, computed one microbatch at a time with a float32 running sum.

Run `course show grad_accumulation` for the lesson, and `course check` to grade this file.
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax

# params = {"w1": (64, 256), "b1": (256,), "w2": (256,)} float32; batch = {"x": (B, 64), "y": (B,)} float32.
# The loss of a batch: mean((jax.nn.gelu(x @ w1 + b1) @ w2 - y) ** 2)


# TODO: jit it once, at module scope, with num_micro static.
def accumulated_grads(params: dict, batch: dict, num_micro: int) -> tuple[jax.Array, dict]:
    """(loss, grads) of the whole batch, as the mean over `num_micro` microbatches of B // num_micro consecutive rows.

    One `lax.scan` (or `lax.fori_loop`) over the microbatches, whose carry holds float32 running sums.
    """
    # TODO: split the batch into microbatches, loop over them accumulating value_and_grad, divide once.
    raise NotImplementedError("accumulated_grads is not written yet")
