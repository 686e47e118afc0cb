"""Exercise `alias_zero_init`: scale the listed (8, 128) blocks of `x`, and make every other block exactly 0.

Run `course show alias_zero_init` for the lesson, and `course check` to grade this file.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK = (8, 128)


def block_scale_kernel(blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Write `scale * x` into the one listed block this grid step works on.

    The parameters follow the specs you give `pl.pallas_call`; change them if your design differs.
    """
    # TODO: one line is enough.
    raise NotImplementedError("block_scale_kernel is not written yet")


def block_sparse_scale(x: jax.Array, blocks: tuple[tuple[int, int], ...], scale: float) -> jax.Array:
    """`scale * x` on each listed block `(bi, bj)` of `x` (rows 8*bi.., columns 128*bj..), exactly 0 elsewhere.

    `x` is float32 (R, C) with R a multiple of 8 and C of 128; `blocks` is a tuple of distinct
    `(bi, bj)` pairs (Python ints); `scale` is a Python float.
    """
    # TODO: a grid of len(blocks) steps whose index maps read the block list by scalar prefetch
    # (pltpu.PrefetchScalarGridSpec), and an output that starts as zeros because a zeros operand
    # is aliased onto it.
    raise NotImplementedError("block_sparse_scale is not written yet")
