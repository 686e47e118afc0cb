"""The chip-free estimate's arithmetic, against cases worked out by hand."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.chip.estimate import kernel_cost
from course.chip.roofline import STEP_S, VECTOR_OP_S, VREG_OPS_PER_S, Chip, chip_named
from course.grading.observe.kernels.kernels import pallas_calls

MIB = 2**20


def _matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    """The course's tiled matmul body: zero, add one K step's product, write at the last step."""
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _write():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _matmul(m: int, n: int, k: int, bm: int, bn: int, bk: int, *, k_first: bool = False, dtype=jnp.bfloat16):
    """The one kernel call of a tiled matmul at these sizes and blocks (K the last grid axis unless `k_first`)."""

    def fn(x, y):
        if k_first:  # grid (K, M, N): each output tile is left and come back to once per K step
            grid, xi, yi, oi = (k // bk, m // bm, n // bn), (lambda kk, i, j: (i, kk)), (lambda kk, i, j: (kk, j)), (
                lambda kk, i, j: (i, j))
        else:
            grid, xi, yi, oi = (m // bm, n // bn, k // bk), (lambda i, j, kk: (i, kk)), (lambda i, j, kk: (kk, j)), (
                lambda i, j, kk: (i, j))
        return pl.pallas_call(
            _matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=grid,
            in_specs=[pl.BlockSpec((bm, bk), xi), pl.BlockSpec((bk, bn), yi)], out_specs=pl.BlockSpec((bm, bn), oi),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)])(x, y)

    (call,) = pallas_calls(fn, jax.ShapeDtypeStruct((m, k), dtype), jax.ShapeDtypeStruct((k, n), dtype))
    return kernel_cost(call)


def test_a_tiled_matmul_moves_what_the_textbook_formula_says() -> None:
    """x is read once per block column of the output, y once per block row, the output written once."""
    m, n, k, bm, bn, bk = 1024, 512, 2048, 256, 128, 512
    cost = _matmul(m, n, k, bm, bn, bk)
    assert cost.grid == (4, 4, 4)
    assert cost.hbm_bytes == (m * k * (n // bn) + k * n * (m // bm) + m * n) * 2
    assert cost.flops == 2 * m * n * k


def test_a_grid_that_leaves_an_output_tile_and_comes_back_moves_it_each_time() -> None:
    """K first: x moves only when its block row changes, y and the output at every step."""
    cost = _matmul(1024, 1024, 1024, 256, 256, 256, k_first=True)
    block = 256 * 256 * 2
    x_moves, y_moves, out_moves = 4 * 4, 64, 64
    assert cost.hbm_bytes == (x_moves + y_moves + out_moves) * block


def test_the_time_is_steps_plus_the_longest_of_traffic_and_compute() -> None:
    """On a made-up chip the parts are easy to check by hand."""
    cost = _matmul(1024, 1024, 1024, 512, 512, 512)
    chip = Chip("made up", peak_flops=1e12, hbm_bytes_per_s=1e9, vmem_bytes=128 * MIB)
    est = cost.on(chip)
    assert est.steps_s == pytest.approx(8 * STEP_S)
    assert est.hbm_s == pytest.approx(cost.hbm_bytes / chip.bytes_per_s)
    assert est.mxu_s == pytest.approx(2 * 1024**3 / chip.flops_per_s)
    # One add of the (512, 512) float32 product into the accumulator per step: 256 registers, one operation.
    assert cost.vector_regs == 8 * 512 * 512 // 1024 and cost.vector_ops == 8
    assert est.vector_s == pytest.approx(cost.vector_regs / VREG_OPS_PER_S + cost.vector_ops * VECTOR_OP_S)
    assert est.seconds == pytest.approx(est.steps_s + max(est.hbm_s, est.mxu_s, est.vector_s))
    assert est.bound == "HBM"


def test_a_narrow_column_costs_whole_registers() -> None:
    """A (512, 1) float32 running max fills 64 registers, as many as a (512, 128) block."""

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.max(x_ref[...], axis=1, keepdims=True) + 1.0

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((512, 1), jnp.float32))(x)

    (call,) = pallas_calls(fn, jax.ShapeDtypeStruct((512, 128), jnp.float32))
    cost = kernel_cost(call)
    assert cost.vector_regs == 64 + 64  # the reduction reads (512, 128); the add writes (512, 1)
    assert cost.vector_ops == 2


def test_a_kernel_that_streams_by_hand_counts_its_dmas() -> None:
    """Rows copied by `make_async_copy` in a loop: every row once, one loop step per DMA."""
    rows = 64

    def kernel(x_hbm, o_ref, buf, sem):
        def step(i, carry):
            copy = pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf, sem)
            copy.start()
            copy.wait()
            o_ref[pl.ds(pl.multiple_of(i * 8, 8), 8), :] = buf[...] * 2
            return carry

        jax.lax.fori_loop(0, rows // 8, step, 0)

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              scratch_shapes=[pltpu.VMEM((8, 128), x.dtype), pltpu.SemaphoreType.DMA(())])(x)

    (call,) = pallas_calls(fn, jax.ShapeDtypeStruct((rows, 128), jnp.float32))
    cost = kernel_cost(call)
    assert cost.hbm_bytes == 2 * rows * 128 * 4  # read by the DMAs, written back once as the output block
    assert cost.loop_steps == rows // 8


def test_a_generation_is_read_from_jax_own_table() -> None:
    """v5e: 197 TFLOP/s of bfloat16 and 820 GB/s of HBM; an unknown name is refused in words."""
    chip = chip_named("v5e")
    assert (chip.peak_flops, chip.hbm_bytes_per_s) == (197e12, 820e9)
    assert chip.fastest(2 * 4096**3, 3 * 4096 * 4096 * 2) == pytest.approx(2 * 4096**3 / 197e12)
    with pytest.raises(ValueError, match="no TPU generation named 'v9'"):
        chip_named("v9")


def test_a_kernel_that_writes_back_by_hand_counts_both_ways_and_each_loop_step_once() -> None:
    """Rows read and written by DMA in one loop: both directions count, and an iteration that starts two copies
    pays one step's bookkeeping."""
    rows = 64

    def kernel(x_hbm, o_hbm, buf, sems):
        def step(i, carry):
            read = pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf, sems.at[0])
            read.start()
            read.wait()
            write = pltpu.make_async_copy(buf, o_hbm.at[pl.ds(i * 8, 8)], sems.at[1])
            write.start()
            write.wait()
            return carry

        jax.lax.fori_loop(0, rows // 8, step, 0)

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec(memory_space=pl.ANY),
                              scratch_shapes=[pltpu.VMEM((8, 128), x.dtype), pltpu.SemaphoreType.DMA((2,))])(x)

    (call,) = pallas_calls(fn, jax.ShapeDtypeStruct((rows, 128), jnp.float32))
    cost = kernel_cost(call)
    assert cost.hbm_bytes == 2 * rows * 128 * 4
    assert cost.loop_steps == rows // 8
