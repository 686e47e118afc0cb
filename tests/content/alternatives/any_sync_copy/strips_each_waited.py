"""Alternative: a class holds the jitted call; one DMA per strip, each on its own semaphore, all waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

LANES = 128


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """All strips are in flight at once; each is waited before the buffer is read."""
    buf, sems = scratch
    copies = [
        pltpu.make_async_copy(x_hbm_ref.at[:, pl.ds(j * LANES, LANES)], buf.at[:, pl.ds(j * LANES, LANES)],
                              sems.at[j])
        for j in range(x_hbm_ref.shape[1] // LANES)
    ]
    for copy in copies:
        copy.start()
    for copy in copies:
        copy.wait()
    o_ref[...] = buf[...] * 2 + 1


class Kernel:
    """Builds the jitted pallas_call once, when the object is made."""

    def __init__(self, kernel):
        self.run = jax.jit(self._call, static_argnames=())
        self.kernel = kernel

    def _call(self, x):
        strips = x.shape[1] // LANES
        return pl.pallas_call(
            self.kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA((strips,))],
        )(x)


_kernel = Kernel(scale_shift_kernel)


def scale_shift(x):
    """Calls the object's jitted pallas_call by keyword."""
    return _kernel.run(x=x)
