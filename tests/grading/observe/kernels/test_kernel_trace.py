"""Tests of `observe.kernels.kernel_trace`: a kernel run over its grid in plain Python, each access and DMA noted."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from pipelines import line_of, reference, serial, traced, unguarded

from course.grading.observe.calls.strict_runs import abstract_tpu
from course.grading.observe.kernels.kernel_trace import TraceUnsupported, evaluate_jaxpr, trace_kernel
from course.grading.observe.kernels.kernels import pallas_calls

HERE = Path(__file__)


def _dmas(trace):
    """(kind, source text, destination text, semaphore text) of every DMA event, in order."""
    return [(e.kind, e.src.text(), e.dst.text(), e.sem.text()) for e in trace.of("dma_start", "dma_wait")]


def test_a_fori_loop_pipeline_is_followed_with_exact_windows() -> None:
    """Loop counters, i % 2 and the pl.when guard are exact: each DMA names its block, slot and semaphore."""
    trace = trace_kernel(traced(reference, nb=3))
    assert _dmas(trace) == [
        ("dma_start", "x_hbm[0:8, 0:128]", "bufs[0, 0:8, 0:128]", "sems[0]"),
        ("dma_start", "x_hbm[8:16, 0:128]", "bufs[1, 0:8, 0:128]", "sems[1]"),
        ("dma_wait", "x_hbm[0:8, 0:128]", "bufs[0, 0:8, 0:128]", "sems[0]"),
        ("dma_start", "x_hbm[16:24, 0:128]", "bufs[0, 0:8, 0:128]", "sems[0]"),
        ("dma_wait", "x_hbm[8:16, 0:128]", "bufs[1, 0:8, 0:128]", "sems[1]"),
        ("dma_wait", "x_hbm[16:24, 0:128]", "bufs[0, 0:8, 0:128]", "sems[0]"),
    ]
    reads = trace.of("read")
    assert [r.window.text() for r in reads] == ["bufs[0, 0:8, 0:128]", "bufs[1, 0:8, 0:128]", "bufs[0, 0:8, 0:128]"]
    assert [r.iters for r in reads] == [(0,), (1,), (2,)] and {r.line for r in reads} == {line_of(reference, 13)}
    assert [e.window.text() for e in trace.of("write")] == [f"o_ref[{8 * i}:{8 * i + 8}, 0:128]" for i in range(3)]


def test_python_loops_unroll_and_lines_point_at_the_learner() -> None:
    """A Python loop is already unrolled in the jaxpr; each start and wait keeps its own line."""
    trace = trace_kernel(traced(serial, nb=2))
    kinds = [(e.kind, e.line) for e in trace.of("dma_start", "dma_wait")]
    assert kinds == [("dma_start", line_of(serial, 4)), ("dma_wait", line_of(serial, 5))] * 2


def test_a_window_outside_its_buffer_is_recorded_not_clamped() -> None:
    """The unguarded prefetch of block nb names rows nb*8 onwards, and `outside` finds it."""
    trace = trace_kernel(traced(unguarded, nb=2))
    (bad,) = trace.outside()
    assert bad.kind == "dma_start" and bad.src.text() == "x_hbm[16:24, 0:128]" and not bad.src.in_bounds
    assert bad.line == line_of(unguarded, 7)


def grid_kernel(x_ref, o_ref, acc_ref):
    """A 2-D grid: zero at j == 0, add every step, write at the last j."""
    @pl.when(pl.program_id(1) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += x_ref[...]

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = acc_ref[...] / 2


def _grid_call():
    """grid_kernel over a (2, 3) grid of (8, 128) blocks."""
    def run(x):
        return pl.pallas_call(grid_kernel, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32), grid=(2, 3),
                              in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
                              out_specs=pl.BlockSpec((8, 128), lambda i, j: (i, 0)),
                              scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)], interpret=True)(x)

    (call,) = pallas_calls(run, jax.ShapeDtypeStruct((16, 384), jnp.float32), path=HERE)
    return call


def test_grid_points_run_in_order_and_primitives_are_recorded() -> None:
    """Grid points run last axis fastest; program_id and num_programs answer; executed ops carry their step."""
    trace = trace_kernel(_grid_call())
    assert trace.grid == (2, 3)
    writes = trace.accesses(trace.buffer("o_ref"), "write")
    assert [w.step for w in writes] == [(0, 2), (1, 2)]
    assert [e.step for e in trace.ops("div")] == [(0, 2), (1, 2)]
    assert all(e.shape == (8, 128) for e in trace.ops("div"))
    zeroing = [w.step for w in trace.accesses(trace.buffer("acc_ref"), "write") if w.line == line_of(grid_kernel, 4)]
    assert zeroing == [(0, 0), (1, 0)]


def scoped_kernel(x_hbm, o_ref):
    """Allocates its buffer with run_scoped and loops with while_loop."""
    def body(buf, sem):
        def cond(i):
            return i < x_hbm.shape[0] // 8

        def step(i):
            copy = pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf, sem)
            copy.start()
            copy.wait()
            o_ref[pl.ds(i * 8, 8), :] = buf[...]
            return i + 1

        lax.while_loop(cond, step, 0)

    pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA(()))


def test_run_scoped_buffers_and_while_loops() -> None:
    """A run_scoped allocation is a buffer of its own with the learner's line; a while loop runs its count."""
    trace = trace_kernel(traced(scoped_kernel, nb=3, scratch=[], path=HERE))
    starts = trace.of("dma_start")
    assert [s.src.text() for s in starts] == [f"x_hbm[{8 * i}:{8 * i + 8}, 0:128]" for i in range(3)]
    buf = starts[0].dst.buffer
    assert buf.arg is None and buf.space == "vmem" and buf.line == line_of(scoped_kernel, 15)
    assert "VMEM float32[8, 128] buffer made at line" in buf.describe()
    assert [s.iters for s in starts] == [(0,), (1,), (2,)]


def prefetch_kernel(idx_ref, x_hbm, o_ref, buf, sem):
    """Copies the block whose number sits in SMEM."""
    copy = pltpu.make_async_copy(x_hbm.at[pl.ds(idx_ref[0] * 8, 8)], buf, sem)
    copy.start()
    copy.wait()
    o_ref[...] = buf[...]


def test_scalar_prefetch_values_drive_windows() -> None:
    """Given the prefetched table, an SMEM read is exact and a DMA window follows it; without it, unknown."""
    def run(idx, x):
        spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(1,),
                                            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                                            out_specs=pl.BlockSpec((8, 128), lambda i, t: (0, 0)),
                                            scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32),
                                                            pltpu.SemaphoreType.DMA(())])
        return pl.pallas_call(prefetch_kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                              interpret=True)(idx, x)

    (call,) = pallas_calls(run, jax.ShapeDtypeStruct((1,), jnp.int32), jax.ShapeDtypeStruct((32, 128), jnp.float32))
    (start,) = trace_kernel(call, prefetch=(np.array([3], np.int32),)).of("dma_start")
    assert start.src.text() == "x_hbm[24:32, 0:128]"
    (blind,) = trace_kernel(call).of("dma_start")
    assert not blind.src.exact and blind.src.text() == "x_hbm[?, 0:128]"


def data_kernel(x_ref, o_ref):
    """Branches on a float: nothing an integer trace can know."""
    lax.cond(x_ref[0, 0] > 0, lambda: o_ref.__setitem__(..., x_ref[...]), lambda: None)


def test_data_dependent_control_flow_is_refused_with_the_line() -> None:
    """A condition computed from floating-point data stops the trace with the learner's line."""
    def run(x):
        return pl.pallas_call(data_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)

    (call,) = pallas_calls(run, jax.ShapeDtypeStruct((8, 128), jnp.float32), path=HERE)
    with pytest.raises(TraceUnsupported, match=f"line {line_of(data_kernel, 2)}.*floating-point"):
        trace_kernel(call)


def test_a_runaway_trace_gives_up() -> None:
    """A trace that executes more than its budget stops with a sentence, never loops for ever."""
    with pytest.raises(TraceUnsupported, match="more than 10 operations"):
        trace_kernel(traced(reference, nb=4), max_equations=10)


def emit_kernel(x_hbm, o_hbm):
    """pltpu.emit_pipeline over (8, 128) blocks, HBM to HBM."""
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    pltpu.emit_pipeline(body, grid=(x_hbm.shape[0] // 8,), in_specs=[spec], out_specs=[spec])(x_hbm, o_hbm)


def test_emit_pipelines_machinery_is_followed_on_an_abstract_tpu() -> None:
    """emit_pipeline's own loop, slots and semaphores trace to a textbook double buffer (unsigned counters too)."""
    with abstract_tpu():
        call = traced(emit_kernel, nb=3, scratch=[], out_specs=pl.BlockSpec(memory_space=pl.ANY))
    trace = trace_kernel(call)
    x_reads = [e.src.text() for e in trace.of("dma_start") if e.src.buffer.name == "x_hbm"]
    assert x_reads == ["x_hbm[0:8, 0:128]", "x_hbm[8:16, 0:128]", "x_hbm[16:24, 0:128]"]
    slots = [e.dst.starts[0] for e in trace.of("dma_start") if e.src.buffer.name == "x_hbm"]
    assert slots == [0, 1, 0]
    assert len(trace.of("dma_wait")) == len(trace.of("dma_start"))


def test_index_maps_evaluate_without_compiling() -> None:
    """evaluate_jaxpr runs an index map (and integer arithmetic with lax's rounding) on NumPy ints."""
    def index_map(i, j):
        return lax.div(i - 7, 2), lax.rem(i - 7, 2), jnp.remainder(j - 7, 3)

    closed = jax.make_jaxpr(index_map)(jnp.int32(0), jnp.int32(0))
    assert [int(v) for v in evaluate_jaxpr(closed, 0, 0)] == [-3, -1, 2]


def _summing(zeroed: bool, aliased: bool = False):
    """The call of a kernel that adds each of 3 grid steps into a scratch, zeroed at step 0 or not; with `aliased`,
    a second output aliases the input and is only added to."""
    def body(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            if zeroed:
                acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...]
        o_ref[...] = acc_ref[...]

    def kernel(x_ref, o_ref, acc_ref):
        body(x_ref, o_ref, acc_ref)

    def aliasing_kernel(x_ref, o_ref, y_ref, acc_ref):
        y_ref[...] += 1.0
        body(x_ref, o_ref, acc_ref)

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    outs = [jax.ShapeDtypeStruct((24, 128), jnp.float32)] * (2 if aliased else 1)

    def run(x):
        return pl.pallas_call(aliasing_kernel if aliased else kernel, out_shape=outs, grid=(3,), in_specs=[spec],
                              out_specs=[spec] * len(outs), scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
                              input_output_aliases={0: 1} if aliased else {}, interpret=True)(x)

    (call,) = pallas_calls(run, jax.ShapeDtypeStruct((24, 128), jnp.float32), path=HERE)
    return call


def test_unset_reads_find_state_read_before_anything_set_it() -> None:
    """A scratch summed into without being zeroed is read at step 0 before any write; zeroed first, it is not.
    An output aliased to an input holds its data, so adding to it reads nothing unset."""
    trace = trace_kernel(_summing(zeroed=False))
    (read,) = trace.unset_reads()
    assert read.window.buffer.name == "acc_ref" and read.step == (0,)
    assert trace_kernel(_summing(zeroed=True)).unset_reads() == []
    aliased = trace_kernel(_summing(zeroed=True, aliased=True))
    assert [b.name for b in aliased.state_buffers()] == ["o_ref", "acc_ref"] and aliased.unset_reads() == []
