"""Tests of `observe.kernels.grid`: which grid axis moves which block, TPU tiles and the VMEM a kernel holds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.kernels.grid import grid_info, tile_problem, vmem_bytes
from course.grading.observe.kernels.kernels import pallas_calls


def mm_kernel(x_ref, y_ref, o_ref, acc_ref):
    """Never run: only its specs matter here."""
    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _matmul(order: str, tiles=(128, 128, 256), dtype=jnp.float32, semantics=None, size=512):
    """The KernelCall of a matmul whose grid axes come in `order` (a permutation of 'mnk')."""
    bm, bn, bk = tiles
    counts = {"m": size // bm, "n": size // bn, "k": size // bk}

    def pick(names, *want):
        return tuple(names[order.index(w)] for w in want)

    def run(x, y):
        params = pltpu.CompilerParams(dimension_semantics=semantics) if semantics else None
        return pl.pallas_call(
            mm_kernel, out_shape=jax.ShapeDtypeStruct((size, size), dtype), grid=tuple(counts[a] for a in order),
            in_specs=[pl.BlockSpec((bm, bk), lambda *g: pick(g, "m", "k")),
                      pl.BlockSpec((bk, bn), lambda *g: pick(g, "k", "n"))],
            out_specs=pl.BlockSpec((bm, bn), lambda *g: pick(g, "m", "n")),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], compiler_params=params, interpret=True)(x, y)

    spec = jax.ShapeDtypeStruct((size, size), dtype)
    (call,) = pallas_calls(run, spec, spec)
    return call


def test_the_k_axis_is_found_wherever_it_sits() -> None:
    """x's dimension 1 and y's dimension 0 move with the K axis, whatever its position; the output's never."""
    for order in ("mnk", "nmk", "kmn", "mkn"):
        info = grid_info(_matmul(order))
        x, y, out = info.blocks
        k = order.index("k")
        assert x.axes_moving(1) == {k} and y.axes_moving(0) == {k}, order
        assert not out.moves[k] and out.axes_moving(0) == {order.index("m")}, order
        assert (x.name, y.name, out.name) == ("x_ref", "y_ref", "o_ref") and x.role == "input"


def test_semantics_are_read_as_words() -> None:
    """Strings and GridDimensionSemantics enums both read as 'parallel' / 'arbitrary'; None when not given."""
    assert grid_info(_matmul("mnk", semantics=("parallel", "parallel", "arbitrary"))).semantic(2) == "arbitrary"
    enums = grid_info(_matmul("mnk", semantics=(pltpu.PARALLEL, pltpu.PARALLEL, pltpu.PARALLEL)))
    assert enums.semantics == ("parallel",) * 3
    assert grid_info(_matmul("mnk")).semantics is None


def test_tile_rules_follow_the_dtype() -> None:
    """(8, 128) for float32, (16, 128) for bfloat16, or the whole dimension; blocks must divide the array."""
    ok = grid_info(_matmul("mnk", tiles=(128, 128, 256)))
    assert all(tile_problem(b) is None for b in ok.blocks)
    narrow = grid_info(_matmul("mnk", tiles=(128, 64, 256))).blocks[1]
    assert "multiples of (8, 128) for float32" in tile_problem(narrow)
    bf16 = grid_info(_matmul("mnk", tiles=(8, 128, 128), dtype=jnp.bfloat16, size=256)).blocks[0]
    assert "(16, 128) for bfloat16" in tile_problem(bf16)
    uneven = grid_info(_matmul("mnk", tiles=(256, 128, 128), size=384)).blocks[0]
    assert "does not divide" in tile_problem(uneven)


def test_vmem_counts_blocks_twice_and_scratch_once() -> None:
    """2 x (x, y and output blocks) + the float32 scratch, in bytes, with one item per piece."""
    total, items = vmem_bytes(_matmul("mnk", tiles=(128, 128, 256)))
    block = 4 * (128 * 256 * 2 + 128 * 128)
    assert total == 2 * block + 4 * 128 * 128
    assert [i.copies for i in items] == [2, 2, 2, 1] and items[3].name == "acc_ref"
    assert items[0].text() == "x_ref [128, 256] float32 x2 = 0.2 MiB"


def gather_kernel(idx_ref, x_ref, o_ref):
    """Copies one block."""
    o_ref[...] = x_ref[...]


def test_index_maps_read_scalar_prefetch_tables() -> None:
    """With the table given, an index map that reads it is evaluated exactly."""
    def run(idx, x):
        spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(4,),
                                            in_specs=[pl.BlockSpec((8, 128), lambda i, t: (t[i], 0))],
                                            out_specs=pl.BlockSpec((8, 128), lambda i, t: (i, 0)))
        return pl.pallas_call(gather_kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32),
                              interpret=True)(idx, x)

    (call,) = pallas_calls(run, jax.ShapeDtypeStruct((4,), jnp.int32), jax.ShapeDtypeStruct((32, 128), jnp.float32))
    moving = grid_info(call, prefetch=(np.array([3, 0, 2, 1], np.int32),))
    assert moving.inputs()[0].axes_moving(0) == {0}
    still = grid_info(call, prefetch=(np.array([2, 2, 2, 2], np.int32),))
    assert still.inputs()[0].moved() == frozenset() and still.outputs()[0].axes_moving(0) == {0}


def test_unwritten_tail_names_the_tiles_a_floor_divided_grid_leaves() -> None:
    """A NaN tail of whole columns (or rows), nothing before it, gives where it starts and the tiles of 128 x k
    whose floor-divided grid stops there; NaN anywhere else, or no such tile, gives None."""
    import numpy as np

    from course.grading import unwritten_tail

    bad = np.zeros((640, 384), bool)
    bad[:, 256:] = True
    assert unwritten_tail(bad, 1) == (256, [256]) and unwritten_tail(bad, 0) is None
    rows = np.zeros((640, 384), bool)
    rows[512:] = True
    assert unwritten_tail(rows, 0) == (512, [256, 512])
    rows[0, 0] = True
    assert unwritten_tail(rows, 0) is None
    whole = np.zeros((384, 384), bool)
    whole[:, 128:] = True  # 128 x k divides 384 only when it leaves nothing: no tile stops at 128
    assert unwritten_tail(whole, 1) is None


def test_unwritten_tails_take_rows_and_columns_together() -> None:
    """The last rows and the last columns unwritten at once (an L, as tiles of 256 leave a (640, 384) result) give
    both tails; either alone gives one; NaN that is not such a tail, or no tile that stops there, gives None."""
    from course.grading import unwritten_tails

    ell = np.zeros((640, 384), bool)
    ell[512:] = True
    ell[:, 256:] = True
    assert unwritten_tails(ell) == {0: (512, [256, 512]), 1: (256, [256])}
    cols = np.zeros((640, 384), bool)
    cols[:, 256:] = True
    assert unwritten_tails(cols) == {1: (256, [256])}
    ell[3, 3] = True
    assert unwritten_tails(ell) is None
    assert unwritten_tails(np.zeros((640, 384), bool)) is None
    quarter = np.zeros((384, 384), bool)
    quarter[:, 128:] = True  # no tile of 128 x k that does not divide 384 stops at 128
    assert unwritten_tails(quarter) is None


def test_bad_region_names_the_region_not_its_bounding_box() -> None:
    """Whole rows and whole columns are named as such; what lies outside them is counted within its own box."""
    from course.grading import bad_region

    ell = np.zeros((640, 384), bool)
    ell[512:] = True
    ell[:, 256:] = True
    assert bad_region(ell) == "all of rows 512 to 639 and all of columns 256 to 383"
    assert bad_region(np.ones((4, 4), bool)) == "every element"
    spots = np.zeros((640, 384), bool)
    spots[10] = True
    spots[3:5, 7:9] = True
    spots[20:22] = True
    assert bad_region(spots) == "all of rows 10 and 20 to 21 and 4 element(s) within rows 3 to 4, columns 7 to 8"
    one = np.zeros((8, 8), bool)
    one[:, 5] = True
    assert bad_region(one) == "all of column 5"
