"""Reference solution for `double_buffer`: x streams in through two VMEM slots and the result streams out
through two more, each slot with its own DMA semaphore."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 8  # rows per block: one (8, 128) float32 tile


def stream_scale_kernel(x_hbm_ref, o_ref, bufs, sems):
    """o = 2 * x, block by block: block i + 1 comes in while block i is computed, and the result of block i
    goes out while block i + 1 is. The kernel holds four blocks of VMEM, whatever the size of x."""
    x_slots, o_slots = bufs  # two slots for x's blocks, two for the results
    x_sems, o_sems = sems  # one DMA semaphore per slot
    n_blocks = x_hbm_ref.shape[0] // ROWS

    def fetch(block, slot):
        """The DMA of one block of x into one input slot, signalling that slot's semaphore."""
        return pltpu.make_async_copy(x_hbm_ref.at[pl.ds(block * ROWS, ROWS)], x_slots.at[slot], x_sems.at[slot])

    def store(block, slot):
        """The DMA of one output slot back to its block of the output, signalling that slot's semaphore."""
        return pltpu.make_async_copy(o_slots.at[slot], o_ref.at[pl.ds(block * ROWS, ROWS)], o_sems.at[slot])

    fetch(0, 0).start()  # prime the pipeline

    def step(i, carry):
        slot = i % 2

        @pl.when(i + 1 < n_blocks)  # no prefetch after the last block
        def _prefetch():
            fetch(i + 1, 1 - slot).start()

        fetch(i, slot).wait()  # block i has landed in its input slot

        @pl.when(i >= 2)  # the output slot still goes out with block i - 2: let it land before refilling it
        def _drain():
            store(i - 2, slot).wait()

        o_slots[slot] = 2 * x_slots[slot]
        store(i, slot).start()
        return carry

    lax.fori_loop(0, n_blocks, step, 0)
    for block in range(max(n_blocks - 2, 0), n_blocks):  # the last write-backs are still in flight
        store(block, block % 2).wait()


@jax.jit
def stream_scale(x: jax.Array) -> jax.Array:
    """2 * x for x float32 (nb * 8, 128): x stays in HBM, and both it and the result are streamed by hand."""
    return pl.pallas_call(
        stream_scale_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[(pltpu.VMEM((2, ROWS, 128), x.dtype), pltpu.VMEM((2, ROWS, 128), x.dtype)),
                        (pltpu.SemaphoreType.DMA((2,)), pltpu.SemaphoreType.DMA((2,)))],
    )(x)
