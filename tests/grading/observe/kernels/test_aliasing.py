"""Tests of `observe.kernels.aliasing`: alias-faithful execution and read-after-write detection."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

from course.grading.observe.kernels.aliasing import (
    first_hazard,
    first_read_after_write,
    reads_after_writes,
    run_aliased,
    unrolled_loops,
)
from course.grading.observe.kernels.kernels import kernel_call

HERE = Path(__file__)
X = jnp.arange(16.0, dtype=jnp.float32).reshape(2, 8)
SDS = jax.ShapeDtypeStruct(X.shape, X.dtype)


def naive_swap(x_ref, o_ref):
    """Writes the left half before reading it."""
    o_ref[:, :4] = x_ref[:, 4:]
    o_ref[:, 4:] = x_ref[:, :4]


def safe_swap(x_ref, o_ref):
    """Reads both halves first."""
    left, right = x_ref[:, :4], x_ref[:, pl.ds(4, 4)]
    o_ref[:, :4] = right
    o_ref[:, 4:] = left


def disjoint_halves(x_ref, o_ref):
    """Reads the right half after writing the left: disjoint, so fine."""
    o_ref[:, :4] = x_ref[:, :4] * 2
    o_ref[:, 4:] = x_ref[:, 4:] * 2


def _hazards(kernel, aliases=None):
    """Read-after-write hazards of `kernel` on X with the given aliases."""
    call = kernel_call(kernel, X, out_shape=SDS, path=HERE,
                       input_output_aliases={0: 0} if aliases is None else aliases)
    return reads_after_writes(call)


def test_shared_ref_shows_what_interpret_hides() -> None:
    """The naive swap is right under interpret=True, wrong with one shared ref; the safe one is right."""
    want = np.concatenate([np.asarray(X)[:, 4:], np.asarray(X)[:, :4]], axis=1)
    copied = pl.pallas_call(naive_swap, out_shape=SDS, input_output_aliases={0: 0}, interpret=True)(X)
    np.testing.assert_array_equal(copied, want)
    shared = run_aliased(naive_swap, X, out_shape=SDS, input_output_aliases={0: 0})
    assert not np.array_equal(shared, want)
    np.testing.assert_array_equal(run_aliased(safe_swap, X, out_shape=SDS, input_output_aliases={0: 0}), want)


def test_write_then_read_sees_the_write() -> None:
    """`o = 7; o = x + 1` gives 8 when shared and x + 1 when not; unaliased outputs start as NaN."""
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.full(o_ref.shape, 7.0, o_ref.dtype)
        o_ref[...] = x_ref[...] + 1

    assert float(run_aliased(kernel, X, out_shape=SDS, input_output_aliases={0: 0})[0, 0]) == 8.0
    assert float(run_aliased(kernel, X, out_shape=SDS, input_output_aliases={})[0, 0]) == 1.0
    untouched = run_aliased(lambda x_ref, o_ref: None, X, out_shape=SDS, input_output_aliases={})
    assert bool(jnp.isnan(untouched).all())


def test_grid_steps_chain_through_the_shared_buffer() -> None:
    """Step i reads block i-1 and writes block i of one buffer, so values accumulate: 1, 2, 3, 4."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    x = jnp.zeros((4, 8), jnp.float32)
    out = run_aliased(kernel, x, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                      input_output_aliases={0: 0}, grid=(4,),
                      in_specs=[pl.BlockSpec((1, 8), lambda i: (jnp.maximum(i - 1, 0), 0))],
                      out_specs=pl.BlockSpec((1, 8), lambda i: (i, 0)))
    np.testing.assert_array_equal(np.asarray(out)[:, 0], [1, 2, 3, 4])


def test_naive_swap_is_flagged_with_both_lines() -> None:
    """The read of x[:, :4] after the write of o[:, :4] is reported with both source lines."""
    hazard = first_read_after_write(kernel_call(naive_swap, X, out_shape=SDS, path=HERE,
                                                input_output_aliases={0: 0}))
    first = naive_swap.__code__.co_firstlineno + 2
    assert hazard is not None and (hazard.write.line, hazard.read.line) == (first, first + 1)
    assert f"line {first + 1} reads `x_ref[:, :4]` after line {first} wrote `o_ref[:, :4]`" in hazard.message()


def test_disjoint_and_safe_orders_are_not_flagged() -> None:
    """A read after a write of a disjoint part, or reads before writes, is no hazard."""
    assert _hazards(disjoint_halves) == []
    assert _hazards(safe_swap) == []
    assert _hazards(naive_swap, aliases={}) == []  # no alias, no hazard


def test_ds_ints_and_ellipsis_regions() -> None:
    """`pl.ds`, integer rows and `...` are compared by the elements they cover."""
    def ds_overlap(x_ref, o_ref):
        o_ref[:, pl.ds(2, 4)] = x_ref[:, pl.ds(0, 4)]
        o_ref[:, pl.ds(0, 2)] = x_ref[:, pl.ds(5, 2)]  # column 5 was written above

    def other_row(x_ref, o_ref):
        o_ref[0] = x_ref[1]
        o_ref[1] = x_ref[0] * 0 + 1  # row 0 was written: overlap

    def ellipsis(x_ref, o_ref):
        o_ref[1] = x_ref[0]
        o_ref[0] = x_ref[...][0]  # x[...] covers row 1

    assert [h.read.text() for h in _hazards(ds_overlap)] == ["x_ref[:, 5:7]"]
    assert [h.read.text() for h in _hazards(other_row)] == ["x_ref[0, :]"]
    assert [h.write.text() for h in _hazards(ellipsis)] == ["o_ref[1, :]"]


def test_dynamic_indices_compare_only_when_equal() -> None:
    """Two uses of `pl.program_id(0)` are one value; unrelated dynamic indices are not flagged."""
    def same_step(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(i, 1)] = x_ref[pl.ds(i, 1)] + 1
        o_ref[pl.ds(pl.program_id(0), 1)] = x_ref[pl.ds(pl.program_id(0), 1)] * 2

    def unrelated(x_ref, o_ref):
        i, j = pl.program_id(0), pl.program_id(1)
        o_ref[pl.ds(i, 1)] = x_ref[pl.ds(0, 1)]
        o_ref[pl.ds(1, 1)] = x_ref[pl.ds(j, 1)]  # may or may not be row i: not provable

    def traced(kernel):
        return reads_after_writes(kernel_call(kernel, X, out_shape=SDS, grid=(2, 2),
                                              input_output_aliases={0: 0}))

    assert len(traced(same_step)) == 1
    assert traced(unrelated) == []


def two_loops(x_ref, o_ref):
    """Writes tanh(x) row by row in one loop, then adds x back in a second: its reads see the writes."""

    def write(i, carry):
        o_ref[pl.ds(i, 1), :] = jnp.tanh(x_ref[pl.ds(i, 1), :])
        return carry

    def add(i, carry):
        o_ref[pl.ds(i, 1), :] = o_ref[pl.ds(i, 1), :] + x_ref[pl.ds(i, 1), :]
        return carry

    jax.lax.fori_loop(0, x_ref.shape[0], write, 0)
    jax.lax.fori_loop(0, x_ref.shape[0], add, 0)


def one_loop(x_ref, o_ref):
    """Row by row, each row read before it is written: correct under aliasing."""

    @pl.loop(0, x_ref.shape[0])
    def _(i):
        v = x_ref[pl.ds(i, 1), :]
        o_ref[pl.ds(i, 1), :] = jnp.tanh(v) + v


def test_hazards_across_loops_are_found_with_both_lines() -> None:
    """Loop indices are dynamic, so the rows compare only once the loops are unrolled: then both lines show."""
    assert _hazards(two_loops) == []  # the loops as they are: rows known only at run time
    hazard = first_hazard(two_loops, X, out_shape=SDS, input_output_aliases={0: 0}, path=HERE)
    assert hazard is not None
    write_line = two_loops.__code__.co_firstlineno + 4
    assert (hazard.read.line, hazard.write.line) == (write_line + 4, write_line)
    assert "reads `x_ref[0, :]`" in hazard.message() and "wrote `o_ref[0, :]`" in hazard.message()
    assert first_hazard(one_loop, X, out_shape=SDS, input_output_aliases={0: 0}, path=HERE) is None


def test_unrolled_loops_keep_dynamic_and_long_loops_and_restore() -> None:
    """Static bounds run as a Python loop; a traced bound, or more steps than the limit, keep the real loop."""
    steps, original = [], jax.lax.fori_loop
    with unrolled_loops(limit=4):
        assert jax.lax.fori_loop(0, 3, lambda i, c: steps.append(i) or c + i, 0) == 3
        assert steps == [0, 1, 2]
        assert int(jax.lax.fori_loop(0, 9, lambda i, c: c + i, 0)) == 36
        assert int(jax.jit(lambda n: jax.lax.fori_loop(0, n, lambda i, c: c + i, 0))(4)) == 6
    assert jax.lax.fori_loop is original
