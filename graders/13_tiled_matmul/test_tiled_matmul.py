"""Grader for `tiled_matmul`: values under the strict TPU interpreter, and how the kernel tiles, streams and sums K.

Values run under the strict TPU interpreter, whatever `interpret=` the learner passed, with the
learner's function jitted once per shape. The structural checks trace `matmul` with
`make_jaxpr` only: the grid and blocks come from evaluating the index maps over the grid
(`grid_info`), the accumulator from a taint pass over the kernel (`accumulators`).
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    CheckFailed,
    GridInfo,
    KernelCall,
    TraceUnsupported,
    assert_dtype,
    assert_is_array,
    assert_shape,
    bad_region,
    callback_error,
    check,
    exact_matmul,
    fail,
    find_accumulators,
    grid_info,
    jitted_once,
    kernel_flow,
    learner_frames,
    learner_line,
    pallas_calls,
    quote_line,
    rounding_report,
    store_dtypes,
    strict_values,
    tile_problem,
    tpu_fallback,
    trace_kernel,
    unwritten_tails,
    vmem_bytes,
    walk_eqns,
    work_outside,
)

F32, BF16 = np.dtype(jnp.float32), np.dtype(jnp.bfloat16)
VALUES_F32 = (640, 384, 384)  # no multiple of 256 anywhere: tiles that assume one miss rows, columns or K;
# M != N: a grid whose M and N axes are swapped walks past the rows and short of the columns
VALUES_BF16 = (128, 1024, 256)
LARGEST = 4096  # the task's largest M, N and K: where blocks that reach the chip's speed are chosen
# Shapes the structural checks trace (make_jaxpr only): the largest in both dtypes, and the value shapes.
SHAPES = ((LARGEST, LARGEST, LARGEST, F32), (LARGEST, LARGEST, LARGEST, BF16), (*VALUES_F32, F32),
          (*VALUES_BF16, BF16))
# The default scoped VMEM of a v5e core. A working set must stay under it: on the chip a float32 kernel of
# (1024, 1024, 256) blocks, 16 MiB by the rule, compiles, and a bfloat16 one of (1024, 1024, 1024) does not.
VMEM_BUDGET = 16 * 2**20
SHARE_LIMIT = 0.02  # float32 accumulation leaves ~0.0002 of outputs off the correctly rounded product


def _inputs(rng: np.random.Generator, m: int, k: int, n: int, dtype: np.dtype) -> tuple[jax.Array, jax.Array]:
    """Random normal x (m, k) and y (k, n) in `dtype`."""
    x = jnp.asarray(rng.standard_normal((m, k)), jnp.float32).astype(dtype)
    y = jnp.asarray(rng.standard_normal((k, n)), jnp.float32).astype(dtype)
    return x, y


def _specs(m: int, k: int, n: int, dtype: np.dtype) -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct]:
    """Abstract x and y, for tracing only."""
    return jax.ShapeDtypeStruct((m, k), dtype), jax.ShapeDtypeStruct((k, n), dtype)


@contextlib.contextmanager
def _stores_explained(path: Path, dtype: np.dtype) -> Iterator[None]:
    """A store that Pallas refuses while tracing because the ref has another dtype than the value (the float32
    product added into an accumulator made in bfloat16), failed as that mistake rather than as JAX's error."""
    try:
        yield
    except Exception as exc:
        found = store_dtypes(exc)
        if found is None:
            raise
        frames = learner_frames(exc.__traceback__, path)
        where = (quote_line(path, frames[-1].lineno) if frames else "") or "a store in your kernel"
        ref, value = found
        fail(f"for {dtype.name} inputs, {where} stores a {value} value into a {ref} ref, which Pallas refuses "
             f"(`Invalid dtype for swap`): the ref was made in the inputs' dtype. The sum over K steps belongs in "
             "a float32 ref whatever the inputs' dtype (`pltpu.VMEM((bm, bn), jnp.float32)` in `scratch_shapes`), "
             "and the output gets it once, cast at the last K step (`acc_ref[...].astype(o_ref.dtype)`).")


def _call(submission: ModuleType, path: Path, m: int, k: int, n: int, dtype: np.dtype) -> KernelCall:
    """The one `pallas_call` that `matmul` makes for these shapes (traced, never run)."""
    with _stores_explained(path, dtype):
        calls = tpu_fallback(lambda: pallas_calls(submission.matmul, *_specs(m, k, n, dtype), path=path))
    check(calls, "`matmul` makes no `pl.pallas_call`: the product belongs in a kernel.")
    check(len(calls) == 1, f"`matmul` makes {len(calls)} `pallas_call`s for one product; make one.")
    call = calls[0]
    check(call.num_inputs == 2 and call.num_outputs == 1,
          f"the `pallas_call` takes {call.num_inputs} input(s) and makes {call.num_outputs} output(s): it "
          "takes x and y, each in blocks, and makes the product.")
    return call


def _name(dtype: np.dtype, m: int, k: int, n: int) -> str:
    """How a message names a call."""
    return f"`matmul(x, y)` for {dtype.name} ({m}, {k}) @ ({k}, {n})"


def _k_axis(info: GridInfo) -> int | None:
    """The grid axis that walks x's K dimension (None when none or several do)."""
    axes = info.inputs()[0].axes_moving(1)
    return next(iter(axes)) if len(axes) == 1 else None


def _run(submission: ModuleType, path: Path, x: jax.Array, y: jax.Array, info: GridInfo | None = None) -> Any:
    """The learner's `matmul(x, y)` under the strict interpreter, jitted once for this shape (`info`, the
    grid's, names why a block falls outside its array)."""
    fn = jitted_once(submission.matmul, ("matmul", x.shape, y.shape, x.dtype))
    try:
        with _stores_explained(path, np.dtype(x.dtype)):
            return strict_values(fn, x, y)
    except CheckFailed:
        raise
    except Exception as exc:
        inner = callback_error(exc)
        if inner is None:
            raise  # the learner's own error: the platform reports it with their line
        if "Revisited block" in inner:
            fail(f"the strict TPU interpreter refused your grid: {inner} An output block is written "
                 "back to HBM when the grid moves to another output block, and it is not brought back "
                 "later, so each output tile's K steps must run one after another: make K the last "
                 "grid axis (`interpret=True` computes this grid right; a TPU does not).")
        why = _uncovered(info) if info is not None and "Out-of-bounds block index" in inner else _swap_from(
            inner, x.shape[0], y.shape[1]) if info is None else None
        fail(f"the strict TPU interpreter stopped your kernel: {inner}" + (f" That is because {why}." if why else ""))


_BLOCK_PAST = re.compile(r'Out-of-bounds block index .*? for input "(x|y)_ref".*?reading \[\(slice\((\d+), (\d+), '
                         r'\d+\), slice\((\d+), (\d+), \d+\)\)\] but input has shape \((\d+), (\d+)\)')


def _swap_from(inner: str, m: int, n: int) -> str | None:
    """From the interpreter's refusal alone (a judge's check has no trace): a block of y read past N up to
    M exactly, or of x past M up to N, is a grid whose M and N axes are swapped."""
    found = _BLOCK_PAST.search(inner)
    if found is None:
        return None
    operand, row_end, col_end = found.group(1), int(found.group(3)), int(found.group(5))
    past, size, other, what = (
        (col_end, n, m, "y's block column (N)") if operand == "y" else (row_end, m, n, "x's block row (M)"))
    if past <= size or past != other:
        return None
    mine, theirs = ("N", "M") if operand == "y" else ("M", "N")
    return (f"the grid axis your index map reads as {what} runs as many steps as {theirs} = {other} has blocks, "
            f"reaching {past} where {mine} = {size}: the grid's M and N axes are swapped. Give the grid in the "
            "order the index maps read it, (M // bm, N // bn, K // bk)")


def _partials(x: jax.Array, y: jax.Array, bk: int) -> list[np.ndarray]:
    """x @ y restricted to each K block of `bk` columns, exactly."""
    k = x.shape[1]
    return [exact_matmul(x[:, t:t + bk], y[t:t + bk]) for t in range(0, k, bk)]


def _which_k_blocks(got: np.ndarray, x: jax.Array, y: jax.Array, bk: int, rtol: float) -> tuple[int, ...] | None:
    """The K blocks whose products add up to `got`, when some but not all of them do."""
    parts = _partials(x, y, bk)
    scale = np.abs(exact_matmul(x, y)).max()
    for size in range(1, len(parts)):
        for chosen in itertools.combinations(range(len(parts)), size):
            if np.allclose(got, sum(parts[i] for i in chosen), rtol=rtol, atol=rtol * scale):
                return chosen
    return None


# The letters of each operand's two dimensions, for messages.
_DIMS = {"x": ("M", "K"), "y": ("K", "N"), "output": ("M", "N")}


def _swapped(info: GridInfo) -> str | None:
    """Whether the grid's M and N axes come in the other order than the output's index map reads them."""
    out = info.outputs()[0]
    rows, cols = out.axes_moving(0), out.axes_moving(1)
    if len(rows) != 1 or len(cols) != 1:
        return None
    (a,), (b,) = rows, cols
    m_blocks, n_blocks = (out.array_shape[d] // out.block_dims[d] for d in (0, 1))
    if m_blocks == n_blocks or (info.grid[a], info.grid[b]) != (n_blocks, m_blocks):
        return None
    return (f"your grid is {info.grid}: grid axis {a} has {n_blocks} steps, as many as N has blocks, and axis {b} "
            f"has {m_blocks}, as many as M has, but your index maps take axis {a} as the block row (M) and axis "
            f"{b} as the block column (N): the grid's M and N axes are swapped. Give the grid in the order the "
            "index maps read it, (M // bm, N // bn, K // bk)")


def _and(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _short_text(short: list[tuple[str, int, int, int]]) -> str:
    """What a grid that falls short of M, N or K leaves out, for each such (letter, size, tile, covered), and why."""
    parts = [{"M": f"rows 0 to {covered - 1} of {size}", "N": f"columns 0 to {covered - 1} of {size}"}.get(
        letter, f"K 0 to {covered - 1} (the products of K {covered} to {size - 1} are never added) of {size}")
        for letter, size, _, covered in short]
    ragged = [entry for entry in short if entry[1] % entry[2]]
    whys = []
    if ragged:
        dims = _and([f"{letter} = {size}" for letter, size, _, _ in ragged])
        grids = _and([f"{letter} // {tile}" for letter, _, tile, _ in ragged])
        tiles = sorted({tile for _, _, tile, _ in ragged})
        if len(ragged) == 1:
            whys.append(f"a tile of {tiles[0]} does not divide {dims}, and a grid of {grids} drops the rest")
        elif len(tiles) == 1:
            whys.append(f"a tile of {tiles[0]} divides none of {dims}, and grids of {grids} drop the rest")
        else:
            each = _and([str(t) for _, _, t, _ in ragged])
            whys.append(f"tiles of {each} do not divide {dims}, and grids of {grids} drop the rest")
    for letter, size, tile, covered in short:
        if not size % tile:
            whys.append(f"{letter} = {size} holds {size // tile} blocks of {tile}, but the grid walks "
                        f"{covered // tile}")
    sizes = _and([f"{letter}{' is' if i == 0 else ''} {size // 128} x 128"
                  for i, (letter, size, _, _) in enumerate(short)])
    return (f"your grid reaches {_and(parts)} only: {'; '.join(whys)}. Pick tiles that divide M, N and K, and the "
            f"grid (M // bm, N // bn, K // bk) (here {sizes})")


def _mismatched_axes(info: GridInfo) -> str | None:
    """When two operands take the blocks of one dimension from different grid axes (y's K from another axis than
    x's, say): each step then pairs blocks of different ranges of that dimension."""
    (x_block, y_block), (out,) = info.inputs()[:2], info.outputs()
    for letter, (a, a_name), (b, b_name) in (
            ("K", (x_block.axes_moving(1), "x"), (y_block.axes_moving(0), "y")),
            ("M", (x_block.axes_moving(0), "x"), (out.axes_moving(0), "the output")),
            ("N", (y_block.axes_moving(1), "y"), (out.axes_moving(1), "the output"))):
        if a and b and a != b:
            return (f"{a_name}'s {letter} blocks are walked by grid axis {_and([str(x) for x in sorted(a)])} and "
                    f"{b_name}'s by grid axis {_and([str(x) for x in sorted(b)])}: each step pairs blocks of different "
                    f"ranges of {letter}. The index maps must agree: x (i, k), y (k, j) and the output (i, j), over "
                    "the grid (i, j, k)")
    return None


def _uncovered(info: GridInfo) -> str | None:
    """Which parts of M, N and K the grid's blocks fall short of (all of them), or else the first it walks past."""
    if 0 in info.grid:
        return (f"your grid is {info.grid}: it has no steps at all, so nothing is written (a tile "
                "larger than its dimension gives 0 blocks). Pick tiles that divide M, N and K")
    misread = _swapped(info) or _mismatched_axes(info)
    if misread:
        return misread
    (x_block, y_block), (out,) = info.inputs()[:2], info.outputs()
    short: dict[str, tuple[str, int, int, int]] = {}
    past = None
    for block, what in ((out, "output"), (x_block, "x"), (y_block, "y")):
        for dim in (0, 1):
            steps = int(np.prod([info.grid[a] for a in block.axes_moving(dim)]))
            tile, size, letter = block.block_dims[dim], block.array_shape[dim], _DIMS[what][dim]
            covered = tile * steps
            if covered < size and (what == "output" or letter == "K"):
                short.setdefault(letter, (letter, size, tile, covered))
            if covered > size and past is None:
                past = (f"your grid walks {what}'s {letter} dimension in {steps} blocks of {tile}, {covered} in all, "
                        f"past {letter} = {size}: the last block reaches {covered - size} beyond the end of {what}, "
                        "where memory holds garbage (NaN under the strict TPU interpreter), and the product "
                        f"adds it in. Pick tiles that divide M, N and K ({letter} here is {size // 128} x 128)")
    return _short_text(list(short.values())) if short else past


def _unwritten_edges(nan: np.ndarray) -> str | None:
    """From the values alone: the last rows, the last columns, or both, and nothing else, were never written, as
    grids of M // tile and N // tile leave them when a tile of 128 x k fits that count and does not divide."""
    tails = unwritten_tails(nan)
    if tails is None:
        return None
    parts, whys, sizes = [], [], []
    for axis, (edge, tiles) in sorted(tails.items()):
        what, letter, size = ("rows", "M", nan.shape[0]) if axis == 0 else ("columns", "N", nan.shape[1])
        parts.append(f"{what} 0 to {edge - 1} of {size}")
        whys.append(f"a tile of {' or '.join(map(str, tiles))} does not divide {letter} = {size}")
        sizes.append(f"{letter} here is {size // 128} x 128")
    return (f"your grid reaches {_and(parts)} only: {_and(whys)}, and a grid of size // tile drops the rest. "
            f"Pick tiles that divide M, N and K ({_and(sizes)})")


def _unset(call: KernelCall | None, path: Path) -> str | None:
    """The first scratch buffer or output block the kernel reads before anything set it, in words (`call` None:
    unknown)."""
    if call is None:
        return None
    try:
        trace = trace_kernel(call)
    except TraceUnsupported:
        return None
    reads = trace.unset_reads()
    if not reads:
        return None
    read = reads[0]
    name = read.window.buffer.name
    return (f"{quote_line(path, read.line) or 'the kernel'} reads `{name}` at grid step "
            f"{read.step} before anything was written to it: scratch and output blocks start as whatever VMEM "
            "held (NaN under the strict TPU interpreter), and a sum that starts from garbage stays garbage. Zero it "
            f"at the first K step (`{name}[...] = jnp.zeros_like({name})` under `pl.when(k == 0)`), or assign the "
            "first product there")


def _nan_text(nan: np.ndarray, info: GridInfo | None, call: KernelCall | None, k: int, path: Path) -> str:
    """Where the result is NaN and the likely reason (`k`: the product's K; M and N are the result's)."""
    share = "" if nan.all() else f"{100 * nan.mean():.0f}% of it"
    never = ("the output is never written: the write at the last K step never runs, or the sum is kept "
             "somewhere that does not last from one grid step to the next (scratch_shapes does, "
             "pl.run_scoped does not)")
    small = [(letter, size) for letter, size in (("M", nan.shape[0]), ("N", nan.shape[1]), ("K", k)) if size < 256]
    if info is None and nan.all() and small:
        # From the values alone: a tile larger than a dimension gives that grid axis no step at all.
        letter, size = small[0]
        never = (f"either your grid has no step along {letter}: a tile larger than {letter} = {size} gives "
                 f"{letter} // tile = 0 blocks, so nothing runs (pick tiles that divide M, N and K: 128 divides "
                 f"every size the task allows), or {never}")
    elif info is None and nan.all() and k % 256:
        # From the values alone the two look alike: say both, the grid's walk past K first.
        never = (f"either every sum took in garbage from past the end of x and y (a K tile that does not divide "
                 f"K = {k}, {k // 128} x 128 here, with a grid that rounds up, reads beyond K: NaN under the strict "
                 f"TPU interpreter), or {never}")
    why = (_uncovered(info) if info is not None else _unwritten_edges(nan)) or (
        (_unset(call, path) or never) if nan.all() else "no grid step wrote them")
    unwritten = "" if why.startswith(("your grid walks", "line")) else "memory nothing was written to reads as NaN"
    notes = [text for text in (share, unwritten) if text]
    return f"the result is NaN in {bad_region(nan)}" + (f" ({'; '.join(notes)})" if notes else "") + f": {why}"


def _diagnose(got: np.ndarray, x: jax.Array, y: jax.Array, call: KernelCall | None, path: Path,
              rtol: float) -> str | None:
    """Say what a wrong result holds: NaN regions, or the product of only some K blocks (`call` None: of any size)."""
    info = None if call is None else grid_info(call)
    k_axis = None if info is None else _k_axis(info)
    shuffled = "" if k_axis is None or info.semantic(k_axis) != "parallel" else (
        f" Your K axis (grid axis {k_axis}) is marked 'parallel', so the strict interpreter runs its "
        "steps in a shuffled order, as a TPU's cores may: the step that zeroes the accumulator does "
        "not come first, nor the one that writes the output last.")
    nan = np.isnan(got)
    if nan.any():
        return _nan_text(nan, info, call, x.shape[1], path) + "." + shuffled
    cover = None if info is None else _uncovered(info)
    if cover:
        return cover + "." + shuffled
    k = x.shape[1]
    sizes = [info.inputs()[0].block_dims[1]] if info is not None else [b for b in (512, 256, 128) if k % b == 0]
    found = ((bk, _which_k_blocks(got, x, y, bk, rtol)) for bk in sizes)
    bk, chosen = next(((bk, c) for bk, c in found if c is not None), (0, None))
    if chosen is None:
        return shuffled.strip() or None
    n_blocks = x.shape[1] // bk
    if chosen == (n_blocks - 1,) and n_blocks > 1:
        text = (f"the result equals the product of the last {bk} columns of K only: the accumulator "
                "is reset at every K step. Zero it only at the first K step (K index 0)")
    elif chosen == (0,):
        text = (f"the result equals the product of the first {bk} columns of K only: the output is "
                "written at the first K step and the later steps never reach it")
    else:
        text = f"the result is the sum over K blocks {list(chosen)} of {n_blocks} (blocks of {bk}) only"
    return text + "." + shuffled


def _check_close(got: Any, x: jax.Array, y: jax.Array, call: KernelCall | None, path: Path, name: str,
                 rtol: float) -> np.ndarray:
    """A real array of the right dtype and shape whose K-block structure is right; returns it as float64."""
    arr = assert_is_array(got, f"the result of {name}")
    assert_dtype(arr, x.dtype, f"the result of {name}")
    assert_shape(arr, (x.shape[0], y.shape[1]), f"the result of {name}")
    values = np.asarray(arr, np.float64)
    want = exact_matmul(x, y)
    scale = np.abs(want).max()
    if not np.allclose(values, want, rtol=rtol, atol=rtol * scale):
        why = _diagnose(values, x, y, call, path, rtol)
        if why is None:
            worst = np.unravel_index(np.argmax(np.abs(values - want)), want.shape)
            why = (f"the largest error is at {tuple(map(int, worst))} (got {values[worst]:.5g}, "
                   f"expected {want[worst]:.5g}).")
        fail(f"{name} is wrong: {why}")
    return values


def _kernel(submission: ModuleType, path: Path, m: int, k: int, n: int, dtype: np.dtype) -> KernelCall | None:
    """The kernel of `matmul`, to explain a wrong result (in a judge's check, read from the executor's trace); None
    when there is no one kernel of x and y to read it from, which the structural checks report."""
    try:
        return _call(submission, path, m, k, n, dtype)
    except CheckFailed:
        return None


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_float32(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`matmul` gives x @ y for float32 (640, 384) @ (384, 384), under the strict TPU interpreter"""
    m, k, n = VALUES_F32
    x, y = _inputs(rng, m, k, n, F32)
    call = _kernel(submission, submission_path, m, k, n, F32)
    info = None if call is None else grid_info(call)
    _check_close(_run(submission, submission_path, x, y, info), x, y, call, submission_path, _name(F32, m, k, n),
                 rtol=1e-4)


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_bfloat16_accumulate_in_float32(submission: ModuleType, rng: np.random.Generator,
                                               submission_path: Path) -> None:
    """bfloat16 (128, 1024) @ (1024, 256): at most 2% of the outputs differ from the correctly rounded product"""
    m, k, n = VALUES_BF16
    x, y = _inputs(rng, m, k, n, BF16)
    call = _kernel(submission, submission_path, m, k, n, BF16)
    info = None if call is None else grid_info(call)
    name = _name(BF16, m, k, n)
    values = _check_close(_run(submission, submission_path, x, y, info), x, y, call, submission_path, name, rtol=3e-2)
    report = rounding_report(values, exact_matmul(x, y), BF16)
    check(report.share <= SHARE_LIMIT,
          f"{name}: {report.percent()} of the outputs differ from the correctly rounded product "
          "(float32 accumulation, rounded once at the end, leaves well under 1%). A bfloat16 sum "
          "rounds at every K step: accumulate in a float32 ref and cast once, when writing the output.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_kernel_does_the_work(submission: ModuleType, submission_path: Path) -> None:
    """One `pallas_call` reads x and y as given, and its output is the result"""
    for m, k, n, dtype in SHAPES[2:]:
        specs = _specs(m, k, n, dtype)
        with _stores_explained(submission_path, dtype):
            outside = tpu_fallback(lambda specs=specs: work_outside(submission.matmul, *specs, path=submission_path,
                                                                    prims=frozenset({"dot_general"})))
        if outside:
            fail(f"{quote_line(submission_path, outside[0][1]) or 'your wrapper'} multiplies outside the "
                 "kernel (`dot_general`): the product must be computed by the `pallas_call`.")
        flow = tpu_fallback(lambda specs=specs: kernel_flow(submission.matmul, *specs, path=submission_path))
        check(len(flow.calls) == 1, f"`matmul` makes {len(flow.calls)} `pallas_call`s; make exactly one.")
        (result,) = flow.results
        if result.kind == "op":
            fail(f"the result is made by `{result.op}` ({quote_line(submission_path, result.line)}) after "
                 "the kernel: a second pass over the whole output in HBM. Give the `pallas_call` the "
                 "output dtype and shape you return, and write it from the kernel (cast the float32 "
                 "accumulator there, at the last K step).")
        check(result.kind == "kernel", f"the result is {result.describe()}, not the kernel's output.")
        call, operands = flow.calls[0], flow.operands[0][flow.calls[0].num_index:]
        for i, src in enumerate(operands[:call.num_inputs]):
            if src.kind == "op":
                fail(f"operand {i} of the `pallas_call` is made by `{src.op}` "
                     f"({quote_line(submission_path, src.line)}) before the kernel: that is a pass over "
                     "the input in HBM. Pass x and y to the `pallas_call` as they are.")
        args = sorted(s.index for s in operands[:call.num_inputs] if s.kind == "argument")
        check(args == [0, 1], f"the `pallas_call` receives {', '.join(s.describe() for s in operands)}; "
                              "give it x and y, the function's two arguments.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_reduction_runs_over_last_grid_axis(submission: ModuleType, submission_path: Path) -> None:
    """A 3-D grid whose last axis walks the K blocks of x and y, never the output's (2 or more steps at K = 4096)"""
    for m, k, n, dtype in SHAPES:
        info = grid_info(_call(submission, submission_path, m, k, n, dtype))
        x_block, y_block, out = info.inputs()[0], info.inputs()[1], info.outputs()[0]
        check(len(info.grid) == 3, f"for {_name(dtype, m, k, n)} your grid is {info.grid}: make it 3-D, "
                                   "(M // bm, N // bn, K // bk), with the K axis last.")
        kx, ky = x_block.axes_moving(1), y_block.axes_moving(0)
        if not kx and not ky and x_block.whole(1):  # one K step: fine below the largest K only
            check(k < LARGEST, f"with K = {k} the x block is {x_block.shape_text()} and the K axis has 1 "
                               "step(s): split K into blocks, so the grid walks them and each output tile "
                               "sums its K steps in VMEM (the working set bounds how large they can be).")
            continue
        if not kx and not ky and info.grid[2] == 1 and x_block.block_dims[1] < k:
            # K // bk = 1 step of a tile that does not divide K: no axis moves, and the rest of K is
            # dropped; the values and the tile check name that, not the grid's order.
            continue
        check(kx == {2} and ky == {2},
              f"K is walked by grid axis {sorted(kx) or 'none'} for x and {sorted(ky) or 'none'} for y: "
              "the last grid axis must walk K, for both, so that one output tile's K steps run one "
              "after another while it stays in VMEM.")
        check(not out.moves[2], "the last grid axis moves the output block too: the output's index map "
                                "must not depend on the K index (it returns (i, j)).")
        check(info.grid[2] >= 2 or k < LARGEST,
              f"with K = {k} the x block is {x_block.shape_text()} and the K axis has {info.grid[2]} "
              "step(s): split K into blocks, so the grid walks them.")


@pytest.mark.judge
def test_blocks_are_tpu_tiles(submission: ModuleType, submission_path: Path) -> None:
    """Blocks divide the arrays, and their last two dims are multiples of (8, 128) (float32) or (16, 128) (bfloat16)"""
    for m, k, n, dtype in SHAPES:
        info = grid_info(_call(submission, submission_path, m, k, n, dtype))
        for block, what in zip(info.blocks, ("x", "y", "output"), strict=False):
            problem = tile_problem(block)
            check(problem is None, f"for {_name(dtype, m, k, n)} the {what} block {block.shape_text()} is not "
                                   f"a TPU tile: {problem}.")


@pytest.mark.judge
def test_working_set_fits_vmem(submission: ModuleType, submission_path: Path) -> None:
    """At every shape traced, 4096 x 4096 x 4096 in both dtypes included, the blocks (twice each) and scratch stay
    under the 16 MiB of scoped VMEM"""
    for m, k, n, dtype in SHAPES:
        total, items = vmem_bytes(_call(submission, submission_path, m, k, n, dtype))
        check(total < VMEM_BUDGET,
              f"for {_name(dtype, m, k, n)} the kernel holds {total / 2**20:.1f} MiB of VMEM "
              f"({'; '.join(i.text() for i in items)}): a working set must stay under the 16 MiB of scoped VMEM a "
              "TPU v5e core gives a kernel (at 16 MiB a bfloat16 kernel already fails to compile). Every blocked "
              "operand is double-buffered by the pipeline, so the working set is 2 x (x block + y block + output "
              "block) + scratch: use smaller blocks.")


def _dot_line(eqn: Any, outer: tuple[Any, ...], path: Path) -> str:
    """The learner's line of a dot, quoted (the enclosing call's if the dot came from a library)."""
    for e in (eqn, *reversed(outer)):
        line = learner_line(e, path)
        if line:
            return quote_line(path, line)
    return "a dot in the kernel"


@pytest.mark.judge
@pytest.mark.points(2)
def test_mxu_gets_input_dtype_and_returns_float32(submission: ModuleType, submission_path: Path) -> None:
    """For bfloat16 inputs, every kernel dot takes bfloat16 operands and returns float32"""
    for m, k, n, dtype in (SHAPES[1], SHAPES[3]):
        call = _call(submission, submission_path, m, k, n, dtype)
        dots = [(e, outer) for e, outer in walk_eqns(call.jaxpr) if e.primitive.name == "dot_general"]
        check(dots, "the kernel makes no `dot_general`: multiply the blocks with `jnp.dot` or `lax.dot_general`.")
        for eqn, outer in dots:
            ins = [np.dtype(v.aval.dtype) for v in eqn.invars]
            out = np.dtype(eqn.outvars[0].aval.dtype)
            where = _dot_line(eqn, outer, submission_path)
            if any(d != BF16 for d in ins):
                fail(f"{where} multiplies {ins[0].name} by {ins[1].name}: the bfloat16 blocks were converted "
                     "first, and a float32 matmul takes several MXU passes. Feed the MXU the blocks as "
                     "they are and ask for a float32 result with `preferred_element_type=jnp.float32`.")
            check(out == F32, f"{where} returns {out.name}: pass `preferred_element_type=jnp.float32` so the "
                              "MXU sums in float32 and hands back float32.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_accumulator_is_float32_vmem(submission: ModuleType, submission_path: Path) -> None:
    """The ref that sums the K steps is float32 in VMEM (a scratch buffer, or a float32 output block)"""
    for m, k, n, dtype in (SHAPES[1], SHAPES[0]):
        call = _call(submission, submission_path, m, k, n, dtype)
        info = grid_info(call)
        found = find_accumulators(call)
        k_axis = _k_axis(info)
        check(found and k_axis is not None and info.grid[k_axis] >= 2,
              f"for {_name(dtype, m, k, n)} no ref sums the K steps: each grid step must add its "
              "product into a ref that keeps it (`acc_ref[...] += jnp.dot(...)`), over two or more K "
              "steps of the last grid axis.")
        for acc in found:
            where = quote_line(submission_path, acc.line) or "the kernel"
            check(acc.dtype == F32, f"{where} accumulates into a {acc.dtype.name} ref (`{acc.name}`): a "
                                    "bfloat16 sum rounds at every K step. Accumulate in a float32 "
                                    "`pltpu.VMEM` scratch and cast once, at the last K step.")
            check(acc.space in ("vmem", "default"),
                  f"{where} accumulates into `{acc.name}`, which lives in {acc.space.upper()}: keep the "
                  "sum in VMEM (`pltpu.VMEM((bm, bn), jnp.float32)` in `scratch_shapes`).")
            check(k_axis == len(info.grid) - 1,
                  f"`{acc.name}` sums one output tile's K steps only if they run one after another: "
                  f"with K on grid axis {k_axis}, the steps in between belong to other tiles, which "
                  "overwrite it. Make K the last grid axis.")


@pytest.mark.judge
def test_k_axis_is_arbitrary(submission: ModuleType, submission_path: Path) -> None:
    """If `dimension_semantics` are given, the K axis is 'arbitrary'"""
    info = grid_info(_call(submission, submission_path, 1024, 1024, 1024, F32))
    k_axis = _k_axis(info)
    if k_axis is None or info.semantics is None:
        return
    given = info.semantic(k_axis)
    check(given == "arbitrary",
          f"the K axis (grid axis {k_axis}) is marked {given!r}: its steps add into one accumulator in "
          "order, so it is a reduction and must be 'arbitrary'; only M and N may be 'parallel'.")


def _early_writes(call: KernelCall, info: GridInfo, k_axis: int) -> list[Any]:
    """The writes of the output block at a K step before the last, unless the output is itself the accumulator."""
    out = call.num_index + call.num_inputs
    if any(acc.root.arg == out for acc in find_accumulators(call)):
        return []  # a float32 output block that sums the K steps is written at each of them by design
    trace = trace_kernel(call)
    last = info.grid[k_axis] - 1
    return [e for e in trace.accesses(trace.arg(out), "write", "update") if e.step[k_axis] < last]


@pytest.mark.judge
def test_output_written_once(submission: ModuleType, submission_path: Path) -> None:
    """Each output tile is written once, at its last K step (unless the float32 output block is the accumulator)"""
    for m, k, n, dtype in SHAPES[2:]:
        call = _call(submission, submission_path, m, k, n, dtype)
        info = grid_info(call)
        k_axis = _k_axis(info)
        if k_axis is None or info.grid[k_axis] < 2:
            continue  # one K step writes once; the grid check says whether K is walked
        try:
            early = _early_writes(call, info, k_axis)
        except TraceUnsupported as exc:
            fail(f"the grader could not follow your kernel: {exc}.")
        if early:
            steps = sorted({e.step[k_axis] for e in early})
            where = quote_line(submission_path, early[0].line) or "the kernel"
            fail(f"for {_name(dtype, m, k, n)}, {where} writes the output block at K step(s) "
                 f"{', '.join(map(str, steps))} of {info.grid[k_axis]}, before the last: each of those writes casts "
                 "and stores a partial sum that the next K step overwrites. Write the output once, at the last "
                 "K step (`@pl.when(k == pl.num_programs(2) - 1)`), from the float32 accumulator.")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    from course.grading import assert_lowers_for_tpu  # kept beside its one use

    for m, k, n, dtype in SHAPES:
        assert_lowers_for_tpu(submission.matmul, *_specs(m, k, n, dtype), name="matmul", path=submission_path)
