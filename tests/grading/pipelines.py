"""Hand-written DMA pipelines, right and wrong, shared by the tests of the kernel trace and the DMA replay."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.kernels.kernels import KernelCall, pallas_calls

HERE = Path(__file__)
SCRATCH = [pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA((2,))]


def line_of(fn: object, offset: int) -> int:
    """The line `offset` lines below the `def` of `fn`, in this file."""
    return fn.__code__.co_firstlineno + offset


def traced(kernel: object, nb: int = 4, scratch: list | None = None, path: Path = HERE,
           **kwargs: object) -> KernelCall:
    """The KernelCall of a pallas_call with an ANY x of nb (8, 128) blocks and a VMEM output.

    `path` is the file the kernel is written in, whose lines the trace reports."""
    x = jax.ShapeDtypeStruct((8 * nb, 128), jnp.float32)

    def run(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              scratch_shapes=SCRATCH if scratch is None else scratch, interpret=True, **kwargs)(x)

    (call,) = pallas_calls(run, x, path=path)
    return call


def _copy(x_hbm, bufs, sems, block, slot, sem=None):
    """The DMA of one block of x into one slot, on that slot's semaphore unless told otherwise."""
    return pltpu.make_async_copy(x_hbm.at[pl.ds(block * 8, 8)], bufs.at[slot], sems.at[slot if sem is None else sem])


def reference(x_hbm, o_ref, bufs, sems):
    """Prefetch block i + 1 into the other slot, wait for block i, compute it."""
    nb = x_hbm.shape[0] // 8
    _copy(x_hbm, bufs, sems, 0, 0).start()

    def step(i, c):
        slot = i % 2

        @pl.when(i + 1 < nb)
        def _():
            _copy(x_hbm, bufs, sems, i + 1, 1 - slot).start()

        _copy(x_hbm, bufs, sems, i, slot).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[slot]
        return c

    lax.fori_loop(0, nb, step, 0)


def swapped(x_hbm, o_ref, bufs, sems):
    """Starts each copy on the other slot's semaphore and waits on its own: the first wait hangs."""
    nb = x_hbm.shape[0] // 8
    _copy(x_hbm, bufs, sems, 0, 0, sem=1).start()

    def step(i, c):
        slot = i % 2

        @pl.when(i + 1 < nb)
        def _():
            _copy(x_hbm, bufs, sems, i + 1, 1 - slot, sem=slot).start()

        _copy(x_hbm, bufs, sems, i, slot).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[slot]
        return c

    lax.fori_loop(0, nb, step, 0)


def whole_wait(x_hbm, o_ref, bufs, sems):
    """Waits with a descriptor of the whole of x: more bytes than any copy brings."""
    nb = x_hbm.shape[0] // 8
    _copy(x_hbm, bufs, sems, 0, 0).start()

    def step(i, c):
        slot = i % 2

        @pl.when(i + 1 < nb)
        def _():
            _copy(x_hbm, bufs, sems, i + 1, 1 - slot).start()

        pltpu.make_async_copy(x_hbm, o_ref, sems.at[slot]).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[slot]
        return c

    lax.fori_loop(0, nb, step, 0)


def one_semaphore(x_hbm, o_ref, bufs, sems):
    """Two slots on one semaphore: each wait finds two copies in flight."""
    nb = x_hbm.shape[0] // 8
    _copy(x_hbm, bufs, sems, 0, 0, sem=0).start()

    def step(i, c):
        slot = i % 2

        @pl.when(i + 1 < nb)
        def _():
            _copy(x_hbm, bufs, sems, i + 1, 1 - slot, sem=0).start()

        _copy(x_hbm, bufs, sems, i, slot, sem=0).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[slot]
        return c

    lax.fori_loop(0, nb, step, 0)


def one_slot(x_hbm, o_ref, bufs, sems):
    """Prefetches into the slot still filling (two semaphores, one slot)."""
    nb = x_hbm.shape[0] // 8
    pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], bufs.at[0], sems.at[0]).start()

    def step(i, c):
        @pl.when(i + 1 < nb)
        def _():
            pltpu.make_async_copy(x_hbm.at[pl.ds((i + 1) * 8, 8)], bufs.at[0], sems.at[(i + 1) % 2]).start()

        pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], bufs.at[0], sems.at[i % 2]).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[0]
        return c

    lax.fori_loop(0, nb, step, 0)


def serial(x_hbm, o_ref, bufs, sems):
    """Starts and waits each copy before its compute: nothing overlaps. A Python loop."""
    for i in range(x_hbm.shape[0] // 8):
        copy = _copy(x_hbm, bufs, sems, i, i % 2)
        copy.start()
        copy.wait()
        o_ref[8 * i:8 * i + 8, :] = 2 * bufs[i % 2]


def unguarded(x_hbm, o_ref, bufs, sems):
    """Prefetches past the last block and never waits for that copy."""
    nb = x_hbm.shape[0] // 8
    _copy(x_hbm, bufs, sems, 0, 0).start()

    def step(i, c):
        slot = i % 2
        _copy(x_hbm, bufs, sems, i + 1, 1 - slot).start()
        _copy(x_hbm, bufs, sems, i, slot).wait()
        o_ref[pl.ds(i * 8, 8), :] = 2 * bufs[slot]
        return c

    lax.fori_loop(0, nb, step, 0)


def early_read(x_hbm, o_ref, bufs, sems):
    """Reads the slot between the start and the wait of its copy."""
    copy = _copy(x_hbm, bufs, sems, 0, 0)
    copy.start()
    o_ref[pl.ds(0, 8), :] = bufs[0]
    copy.wait()


def refill(x_hbm, o_ref, bufs, sems):
    """Lands block 0 in slot 0, then copies block 1 over it before anything read it."""
    first = _copy(x_hbm, bufs, sems, 0, 0)
    first.start()
    first.wait()
    second = _copy(x_hbm, bufs, sems, 1, 0)
    second.start()
    second.wait()
    o_ref[pl.ds(0, 8), :] = bufs[0]


def write_back(x_hbm, o_hbm, bufs, sems):
    """Copies one block through VMEM to an ANY output, overwriting the slot during the write-back."""
    fetch = _copy(x_hbm, bufs, sems, 0, 0)
    fetch.start()
    fetch.wait()
    out = pltpu.make_async_copy(bufs.at[0], o_hbm.at[pl.ds(0, 8)], sems.at[1])
    out.start()
    bufs[0] = jnp.zeros((8, 128), jnp.float32)
    out.wait()
