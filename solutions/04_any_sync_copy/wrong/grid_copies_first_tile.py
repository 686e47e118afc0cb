"""A grid over row tiles whose every step copies the first tile (no program_id); must fail test_values."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 8


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: step i should copy rows [8i, 8i + 8) but copies rows [0, 8) every time."""
    (tile,) = scratch
    pltpu.sync_copy(x_hbm_ref.at[pl.ds(0, ROWS)], tile)
    o_ref[...] = tile[...] * 2 + 1


class ScaleShift:
    """The pallas_call built once per shape and kept on an object."""

    def __init__(self):
        self.cache = {}

    def __call__(self, x):
        key = (x.shape, x.dtype)
        if key not in self.cache:
            self.cache[key] = jax.jit(pl.pallas_call(
                scale_shift_kernel,
                grid=(x.shape[0] // ROWS,),
                in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                out_specs=pl.BlockSpec((ROWS, x.shape[1]), lambda i: (i, 0)),
                out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                scratch_shapes=[pltpu.VMEM((ROWS, x.shape[1]), x.dtype)],
            ))
        return self.cache[key](x)


scale_shift = ScaleShift()
