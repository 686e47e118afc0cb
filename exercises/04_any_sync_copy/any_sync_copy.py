"""Exercise `any_sync_copy`: keep the input in HBM (`pl.ANY`) and copy it into VMEM yourself, by DMA.

`course show any_sync_copy` prints the lesson; `course check any_sync_copy` grades this file under
the strict TPU interpreter.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """o = 2 * x + 1, where `x_hbm_ref` stays in HBM and must be copied into VMEM before use."""
    # TODO: copy x_hbm_ref into a VMEM buffer (pltpu.sync_copy, inside pl.run_scoped or with
    # scratch_shapes), then compute from the copy.
    raise NotImplementedError("scale_shift_kernel")


def scale_shift(x: jax.Array) -> jax.Array:
    """2 * x + 1 for a 2-D float32 or bfloat16 `x` of shape (8k, 128m), by `scale_shift_kernel`."""
    # TODO: pl.pallas_call(scale_shift_kernel, ..., in_specs=[pl.BlockSpec(memory_space=pl.ANY)])(x)
    raise NotImplementedError("scale_shift")
