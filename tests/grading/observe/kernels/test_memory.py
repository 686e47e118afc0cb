"""Tests of `observe.kernels.memory`: memory spaces of refs, accesses and DMAs in kernel jaxprs."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.kernels.kernels import pallas_calls
from course.grading.observe.kernels.memory import (
    dma_copies,
    explain_strict_failure,
    hbm_access_message,
    kernel_memory,
    memory_accesses,
    ref_spaces,
    smem_reads,
)

HERE = Path(__file__)
X = jnp.ones((16, 128), jnp.float32)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def _line(fn: object, offset: int) -> int:
    """The line `offset` lines below the `def` of `fn`, in this file."""
    return fn.__code__.co_firstlineno + offset


def _call(kernel, x=X, **kwargs):
    """The KernelCall of a pallas_call with an ANY input and a blocked output, traced here."""
    def run(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[ANY], interpret=True, **kwargs)(x)

    (call,) = pallas_calls(run, x, path=HERE)
    return call


def sync_kernel(x_hbm_ref, o_ref):
    """The textbook copy: sync_copy into a scoped VMEM buffer, then index the buffer."""
    def body(buf):
        pltpu.sync_copy(x_hbm_ref, buf)
        o_ref[...] = buf[...] * 2

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype))


def early_kernel(x_hbm_ref, o_ref, buf, sem):
    """Reads the first rows of the destination between start and wait, then starts a copy it never waits."""
    copy = pltpu.make_async_copy(x_hbm_ref.at[pl.ds(0, 8)], buf.at[pl.ds(0, 8)], sem)
    copy.start()
    o_ref[...] = buf[...]
    copy.wait()
    pltpu.make_async_copy(x_hbm_ref, buf, sem).start()


def disjoint_kernel(x_hbm_ref, o_ref, buf, sem):
    """Reads rows 8: while rows :8 are in flight: no overlap, so no early read."""
    copy = pltpu.make_async_copy(x_hbm_ref.at[pl.ds(0, 8)], buf.at[pl.ds(0, 8)], sem)
    copy.start()
    o_ref[8:] = buf[8:]
    copy.wait()
    o_ref[:8] = buf[:8]


def double_buffer_kernel(x_hbm_ref, o_ref, bufs, sems):
    """Fetches tile i + 1 while computing tile i; the loop's wait answers the start of the next step."""
    def copy(i, slot):
        return pltpu.make_async_copy(x_hbm_ref.at[pl.ds(i * 8, 8)], bufs.at[slot], sems.at[slot])

    copy(0, 0).start()

    def step(i, carry):
        slot = i % 2
        copy(i, slot).wait()

        @pl.when(i + 1 < 2)
        def _():
            copy(i + 1, 1 - slot).start()

        o_ref[pl.ds(i * 8, 8), :] = bufs[slot]
        return carry

    lax.fori_loop(0, 2, step, 0)


def direct_kernel(x_hbm_ref, o_ref):
    """Indexes the HBM ref directly."""
    o_ref[...] = x_hbm_ref[...]


def converting_kernel(x_hbm_ref, o_ref):
    """DMAs bfloat16 into a float32 buffer."""
    def body(buf):
        pltpu.sync_copy(x_hbm_ref, buf)
        o_ref[...] = buf[...].astype(o_ref.dtype)

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, jnp.float32))


def test_spaces_of_arguments_and_scoped_buffers() -> None:
    """Arguments keep their declared spaces; a run_scoped buffer is recorded with the line that made it."""
    call = _call(sync_kernel)
    assert ref_spaces(call) == {"x_hbm_ref": "any", "o_ref": "default"}
    mem = kernel_memory(call)
    scoped = [r for r in mem.refs if r.arg is None]
    assert [(r.space, r.dtype, r.line) for r in scoped][0] == ("vmem", np.dtype(np.float32), _line(sync_kernel, 6))
    assert "VMEM float32[16, 128] buffer made at line" in scoped[0].describe()


def test_accesses_carry_space_shape_and_line() -> None:
    """The load comes from the VMEM buffer and the store goes to the blocked output, on the learner's line."""
    accesses = memory_accesses(_call(sync_kernel))
    line = _line(sync_kernel, 4)
    assert [(a.kind, a.space, a.shape, a.line) for a in accesses] == [
        ("load", "vmem", (16, 128), line), ("store", "default", (16, 128), line)]


def test_sync_copy_takes_the_line_of_the_call() -> None:
    """sync_copy's DMA has no frame of the learner's; it takes the enclosing line, and is waited."""
    (dma,) = dma_copies(_call(sync_kernel))
    assert dma.line == _line(sync_kernel, 3) and dma.waited and dma.read_before_wait is None
    assert (dma.src.name, dma.src.space, dma.dst.space, dma.same_dtype) == ("x_hbm_ref", "any", "vmem", True)


def test_read_before_wait_and_never_waited() -> None:
    """A read overlapping an in-flight destination is found; a start no wait answers is unwaited."""
    scratch = [pltpu.VMEM(X.shape, X.dtype), pltpu.SemaphoreType.DMA(())]
    mem = kernel_memory(_call(early_kernel, scratch_shapes=scratch))
    first, second = mem.dmas
    assert first.waited and first.wait_line == _line(early_kernel, 5)
    assert first.read_before_wait is not None and first.read_before_wait.line == _line(early_kernel, 4)
    assert not second.waited and mem.unwaited() == [second]
    assert f"line {_line(early_kernel, 6)}" in mem.uncopied_cause() and "never waited" in mem.uncopied_cause()


def test_a_disjoint_read_is_not_early() -> None:
    """Reading rows the DMA does not write, before its wait, is fine."""
    scratch = [pltpu.VMEM(X.shape, X.dtype), pltpu.SemaphoreType.DMA(())]
    mem = kernel_memory(_call(disjoint_kernel, scratch_shapes=scratch))
    assert mem.early_reads() == [] and mem.unwaited() == [] and mem.uncopied_cause() is None


def test_double_buffering_in_a_loop_is_waited() -> None:
    """A start answered by the next iteration's wait counts as waited; slots differ, so no early read."""
    scratch = [pltpu.VMEM((2, 8, 128), X.dtype), pltpu.SemaphoreType.DMA((2,))]
    mem = kernel_memory(_call(double_buffer_kernel, scratch_shapes=scratch))
    assert len(mem.dmas) == 2 and mem.unwaited() == [] and mem.early_reads() == []


def test_converting_dma_is_named_by_line() -> None:
    """A bfloat16 -> float32 DMA is flagged, and the simulator's bare error is explained with its line."""
    mem = kernel_memory(_call(converting_kernel, x=X.astype(jnp.bfloat16)))
    (dma,) = mem.converting()
    assert not dma.same_dtype and dma.line == _line(converting_kernel, 3)
    text = explain_strict_failure(RuntimeError("INTERNAL: CpuCallback error ... AssertionError"), mem)
    assert f"line {dma.line}" in text and "bfloat16 to float32" in text
    assert explain_strict_failure(ValueError("something else"), mem) is None


def test_direct_access_of_hbm_is_explained() -> None:
    """A load of an ANY ref is found with its line; the message for a store says to copy out instead."""
    mem = kernel_memory(_call(direct_kernel))
    (load,) = mem.in_space("any", "hbm")
    assert load.kind == "load" and load.line == _line(direct_kernel, 2)
    text = explain_strict_failure(ValueError("get_p: ... cannot be referenced directly."), mem)
    assert f"line {load.line} loads from `x_hbm_ref`" in text and "sync_copy" in text
    store = mem.accesses[-1]
    assert "then copy that buffer into `o_ref`" in hbm_access_message(store)


def test_smem_reads_have_their_shapes() -> None:
    """A rank-0 read of a scalar-prefetch table has shape (); a length-1 slice has shape (1,)."""
    def kernel(idx_ref, x_ref, o_ref):
        b = pl.program_id(0)
        one = idx_ref[b]
        vec = idx_ref[pl.ds(b, 1)]
        o_ref[...] = x_ref[...] + one + vec[0]

    def run(idx, x):
        spec = pl.BlockSpec((8, 128), lambda i, idx_ref: (i, 0))
        grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2,), in_specs=[spec],
                                                 out_specs=spec)
        return pl.pallas_call(kernel, grid_spec=grid_spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=True)(idx, x)

    (call,) = pallas_calls(run, jnp.arange(2, dtype=jnp.int32), X, path=HERE)
    mem = kernel_memory(call)
    assert [r.name for r in mem.smem_refs()] == ["idx_ref"]
    assert [(a.shape, a.line) for a in smem_reads(call)] == [((), _line(kernel, 2)), ((1,), _line(kernel, 3))]


WIDE = jnp.ones((16, 384), jnp.float32)
STRIP_BYTES = 16 * 128 * 4


def strips_kernel(x_hbm_ref, o_ref, buf, sem):
    """One copy per 128-column strip on one semaphore, and one wait, for the first strip only."""
    copies = [pltpu.make_async_copy(x_hbm_ref.at[:, pl.ds(j * 128, 128)], buf.at[:, pl.ds(j * 128, 128)], sem)
              for j in range(3)]
    for copy in copies:
        copy.start()
    copies[0].wait()
    o_ref[...] = buf[...]


def fori_strips_kernel(x_hbm_ref, o_ref, buf, sem):
    """The strip copies started in a fori_loop of 3 turns, one wait after it."""
    def strip(j):
        return pltpu.make_async_copy(x_hbm_ref.at[:, pl.ds(j * 128, 128)], buf.at[:, pl.ds(j * 128, 128)], sem)

    lax.fori_loop(0, 3, lambda j, c: (strip(j).start(), c)[1], 0)
    strip(0).wait()
    o_ref[...] = buf[...]


def big_wait_kernel(x_hbm_ref, o_ref, buf, sem):
    """The strip copies waited by one descriptor that covers the whole buffer: a semaphore counts bytes."""
    for j in range(3):
        pltpu.make_async_copy(x_hbm_ref.at[:, pl.ds(j * 128, 128)], buf.at[:, pl.ds(j * 128, 128)], sem).start()
    pltpu.make_async_copy(x_hbm_ref, buf, sem).wait()
    o_ref[...] = buf[...]


def twice_kernel(x_hbm_ref, o_ref, buf, sem):
    """Waits twice for one copy: the second wait has nothing to wait for."""
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()
    copy.wait()
    o_ref[...] = buf[...]


def _wide(kernel):
    """The KernelMemory of `kernel` over a (16, 384) input, with a buffer and one semaphore as scratch."""
    scratch = [pltpu.VMEM(WIDE.shape, WIDE.dtype), pltpu.SemaphoreType.DMA(())]
    return kernel_memory(_call(kernel, x=WIDE, scratch_shapes=scratch))


def test_one_wait_for_many_strips_leaves_the_others_unwaited() -> None:
    """A wait takes its own descriptor's bytes: one strip's wait answers one of three copies."""
    mem = _wide(strips_kernel)
    assert [d.nbytes for d in mem.dmas] == [STRIP_BYTES] * 3
    assert [d.waited for d in mem.dmas] == [True, False, False]
    cause = mem.uncopied_cause()
    assert f"line {_line(strips_kernel, 5)} starts 3 DMAs on one semaphore" in cause
    assert f"wait on it at line {_line(strips_kernel, 6)} waits for only {STRIP_BYTES} bytes" in cause
    assert "2 of them never land" in cause and mem.stuck == []


def test_a_start_in_a_loop_counts_once_per_turn() -> None:
    """A start inside a fori_loop of 3 turns is 3 copies; the one wait after the loop answers one."""
    mem = _wide(fori_strips_kernel)
    (dma,) = mem.dmas
    assert (dma.times, dma.waited, dma.missing) == (3, False, 2 * STRIP_BYTES)
    assert "starts 3 DMAs on one semaphore" in mem.uncopied_cause()


def test_one_wait_for_all_the_bytes_answers_every_strip() -> None:
    """A wait whose descriptor covers the whole buffer takes every strip's bytes."""
    mem = _wide(big_wait_kernel)
    assert mem.unwaited() == [] and mem.uncopied_cause() is None and mem.stuck == []


def test_a_wait_with_nothing_to_wait_for_is_stuck() -> None:
    """A second wait for one copy never returns; it is named with its line before anything runs it."""
    mem = _wide(twice_kernel)
    assert mem.unwaited() == []
    (stuck,) = mem.stuck
    assert (stuck.line, stuck.nbytes) == (_line(twice_kernel, 5), 3 * STRIP_BYTES)
    assert f"line {stuck.line} waits on `buf`" not in mem.stuck_message()
    assert f"line {stuck.line} waits on `sem` for {3 * STRIP_BYTES} bytes" in mem.stuck_message()


def halves_kernel(x_hbm_ref, o_ref, buf, sems):
    """Copies two halves on two semaphores of one array, and waits on the first one twice."""
    first = pltpu.make_async_copy(x_hbm_ref.at[:, :128], buf.at[:, :128], sems.at[0])
    second = pltpu.make_async_copy(x_hbm_ref.at[:, 128:], buf.at[:, 128:], sems.at[1])
    first.start()
    second.start()
    first.wait()
    first.wait()
    o_ref[...] = buf[...]


def test_two_elements_of_a_semaphore_array_are_two_semaphores() -> None:
    """`sems.at[0]` and `sems.at[1]` count apart: a second wait on the first is stuck, the second copy unwaited."""
    x = jnp.ones((8, 256), jnp.float32)
    scratch = [pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA((2,))]
    mem = kernel_memory(_call(halves_kernel, x=x, scratch_shapes=scratch))
    (stuck,) = mem.stuck
    assert (stuck.line, stuck.nbytes) == (_line(halves_kernel, 7), 8 * 128 * 4)
    assert f"line {stuck.line} waits on `sems.at[0]` for 4096 bytes" in mem.stuck_message()
    assert [d.waited for d in mem.dmas] == [True, False]


def test_double_buffering_is_not_stuck_and_a_grid_counts_its_steps() -> None:
    """Conditional starts leave the count to the run; a copy started and waited per grid step is waited."""
    scratch = [pltpu.VMEM((2, 8, 128), X.dtype), pltpu.SemaphoreType.DMA((2,))]
    assert kernel_memory(_call(double_buffer_kernel, scratch_shapes=scratch)).stuck == []

    def per_step(x_hbm_ref, o_ref, tile):
        pltpu.sync_copy(x_hbm_ref.at[pl.ds(pl.program_id(0) * 8, 8)], tile)
        o_ref[...] = tile[...]

    mem = kernel_memory(_call(per_step, grid=(2,), out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                              scratch_shapes=[pltpu.VMEM((8, 128), X.dtype)]))
    (dma,) = mem.dmas
    assert (dma.times, dma.waited, mem.stuck) == (2, True, [])
