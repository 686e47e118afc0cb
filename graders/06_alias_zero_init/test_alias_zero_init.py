"""Grader for `alias_zero_init`: values under the strict TPU interpreter, grid length, output aliased from zeros."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    BlockMismatch,
    KernelCall,
    OutputOrigin,
    assert_dtype,
    assert_is_array,
    assert_lowers_for_tpu,
    assert_shape,
    block_mismatches,
    callback_error,
    check,
    fail,
    learner_line,
    output_origins,
    pallas_calls,
    tpu_interpret,
    traced,
)

BLOCK = (8, 128)
# (shape of x, listed blocks); None lists every block. Each case compiles once and runs one grid
# step per listed block, about 2 ms a step under the strict interpreter: 19 steps in all.
VALUE_CASES = (((16, 384), 1), ((16, 384), 2), ((16, 384), 4), ((32, 512), 6), ((24, 256), None))
Blocks = tuple[tuple[int, int], ...]


def _case(rng: np.random.Generator, shape: tuple[int, int], k: int | None) -> tuple[np.ndarray, Blocks, float]:
    """Random x, k distinct blocks in a random order (all of them for None), and a scale that is not 1."""
    x = rng.standard_normal(shape).astype(np.float32)
    every = [(i, j) for i in range(shape[0] // BLOCK[0]) for j in range(shape[1] // BLOCK[1])]
    order = rng.permutation(len(every))[: len(every) if k is None else k]
    scale = float(np.round(rng.uniform(1.5, 3.5), 3))
    return x, tuple(every[int(p)] for p in order), scale


def _expected(x: np.ndarray, blocks: Blocks, scale: float) -> np.ndarray:
    """scale * x on the listed blocks, 0 elsewhere."""
    out = np.zeros_like(x)
    for i, j in blocks:
        rows, cols = slice(i * BLOCK[0], (i + 1) * BLOCK[0]), slice(j * BLOCK[1], (j + 1) * BLOCK[1])
        out[rows, cols] = x[rows, cols] * np.float32(scale)
    return out


def _head(x: np.ndarray, blocks: Blocks, scale: float) -> str:
    """How a message names the call it is about."""
    return f"`block_sparse_scale(x, blocks, {scale})` for x of shape {x.shape} and blocks={blocks}"


def _run(submission: ModuleType, x: np.ndarray, blocks: Blocks, scale: float) -> Any:
    """Call the learner's function and wait for it, explaining a block index outside `x`."""
    try:
        return jax.block_until_ready(submission.block_sparse_scale(jnp.asarray(x), blocks, scale))
    except Exception as exc:
        inner = callback_error(exc)
        if inner is None:
            raise
        found = re.search(r'block index \(([^)]*)\) for input "(\w+)" in iteration \((\d+)', inner)
        if found is None:
            fail(f"{_head(x, blocks, scale)} failed inside the strict TPU interpreter: {inner}")
        index = tuple(int(v) for v in found.group(1).split(",") if v.strip())
        fail(_outside_message(x, blocks, scale, index, found.group(2), int(found.group(3))))


def _outside_message(x: np.ndarray, blocks: Blocks, scale: float, index: tuple[int, ...], ref: str,
                     step: int) -> str:
    """Why a grid step asked for a block that `x` does not have."""
    rows, cols = x.shape[0] // BLOCK[0], x.shape[1] // BLOCK[1]
    want = blocks[step] if step < len(blocks) else None
    text = (f"{_head(x, blocks, scale)}: grid step {step} sent `{ref}` to block {index}, outside x's "
            f"{rows} x {cols} blocks of (8, 128)")
    if want is not None and index == tuple(reversed(want)):
        return (text + f"; that step should work on listed block {want}. Your index map returns "
                "(column, row): it must return (row, column), in the order of x's dimensions.")
    return (text + (f"; that step should work on listed block {want}." if want is not None else ".")
            + " An index map returns block coordinates (row block, column block), not element offsets.")


def _blocks_text(found: list[BlockMismatch]) -> str:
    """'(0, 1), (1, 2) and 3 more'."""
    shown = ", ".join(str(m.index) for m in found[:4])
    return shown + (f" and {len(found) - 4} more" if len(found) > 4 else "")


def _operand_words(origin: OutputOrigin) -> list[str]:
    """A name for each operand of the kernel: a scalar-prefetch table, `x`, the zeros, or what made it."""
    assert origin.kernel is not None
    words = []
    for i, made in enumerate(origin.operands):
        if i < origin.kernel.num_index:
            words.append("table")
        else:
            words.append({"argument 0": "x", "broadcast_in_dim": "zeros"}.get(made, made))
    return words


def _alias_fix(origin: OutputOrigin | None) -> str:
    """Which operand the alias should name, counted among the learner's own operands."""
    rule = "alias indices count every operand of the `pallas_call`, the scalar-prefetch tables included"
    if origin is None or origin.kind != "kernel" or not origin.operands:
        return f"With operands (table, x, zeros) the zeros are operand 2: {rule}."
    words = _operand_words(origin)
    zeros = [i for i, w in enumerate(words) if w == "zeros"]
    target = (f"alias the zeros, operand {zeros[0]}" if zeros
              else "pass `jnp.zeros_like(x)` as one more operand and alias it")
    return f"Your operands are ({', '.join(words)}): {target} ({rule})."


def _moved(out: np.ndarray, sx: np.ndarray, found: list[BlockMismatch]) -> dict[tuple[int, ...], tuple[int, int]]:
    """{wrong block: the other block whose `scale * x` it holds}, for the wrong blocks that hold one."""
    rows, cols = out.shape[0] // BLOCK[0], out.shape[1] // BLOCK[1]

    def block(a: np.ndarray, i: int, j: int) -> np.ndarray:
        return a[i * BLOCK[0]:(i + 1) * BLOCK[0], j * BLOCK[1]:(j + 1) * BLOCK[1]]

    moved = {}
    for m in found:
        got = block(out, *m.index)
        source = next(((i, j) for i in range(rows) for j in range(cols) if (i, j) != m.index
                       and np.allclose(got, block(sx, i, j), rtol=1e-6)), None)
        if source is not None and not np.allclose(got, 0):
            moved[m.index] = source
    return moved


def _explain(found: list[BlockMismatch], blocks: Blocks,
             moved: dict[tuple[int, ...], tuple[int, int]] | None = None) -> str:
    """One or two sentences on what the wrong blocks hold, unlisted blocks first.

    The values check runs in the judge, which never reads the learner's program: what it says
    comes from the values alone, and the checks that read the program name the lines."""
    if moved:
        (at, source), *_ = moved.items()
        return (f"block {at} holds `scale * x` of block {source}: a grid step read x at one block and "
                "wrote its output at another. The index maps of x and of the output must both send "
                "step i to `blocks[i]`: give every blocked operand the same index map.")
    listed = set(blocks)
    unlisted = [m for m in found if m.index not in listed]
    wrong_listed = [m for m in found if m.index in listed]
    if unlisted:
        return _explain_unlisted(unlisted, wrong_listed)
    m = wrong_listed[0]
    if m.nan_count:
        return (f"listed blocks {_blocks_text(wrong_listed)} hold {m.holds()}: the kernel never wrote them, "
                "or wrote values computed from memory nothing wrote. An output block is written back to "
                "memory after its step, never copied in, aliased or not: its VMEM starts undefined (NaN "
                "under the strict interpreter), and so is anything computed from it, such as `o_ref[...]` "
                "read before a store. Each grid step's index maps must send it to `blocks[i]` (a DMA into "
                "the output must be waited on before the step ends), and the step must store the block's "
                "value: `o_ref[...] = x_ref[...] * scale`.")
    if m.same_as == "0":
        return (f"listed blocks {_blocks_text(wrong_listed)} hold {m.holds()}: the kernel never wrote "
                "them. Each grid step's index maps must send it to `blocks[i]` (and a DMA into the "
                "output must be waited on before the step ends).")
    if m.same_as == "`x`":
        return (f"listed blocks {_blocks_text(wrong_listed)} hold `x` unscaled; each must be `scale * x`.")
    return f"listed block {m.index} holds {m.holds()}; it must be `scale * x`."


def _explain_unlisted(unlisted: list[BlockMismatch], wrong_listed: list[BlockMismatch]) -> str:
    """What the blocks that are not listed hold instead of 0, and what that says about the code."""
    which = f"unlisted blocks {_blocks_text(unlisted)}"
    first = unlisted[0]
    if first.nan_count:
        return (f"{which} hold {first.holds()}: nothing wrote them, and the strict interpreter "
                "fills memory that nothing was copied into with NaN (a TPU leaves whatever was "
                "there before). A block the grid never visits is never written, and a step that "
                "skips its block (`pl.when`) still copies its unwritten output block back, even when "
                "zeros are aliased onto the output. Alias a "
                "`jnp.zeros_like(x)` operand onto the output with `input_output_aliases` so every "
                "block starts at 0, and visit only the listed blocks: a grid of `(len(blocks),)` steps. "
                "`InterpretParams(uninitialized_memory='zero')` only hides this in the "
                "interpreter: a TPU has no such setting, and the grader always runs the strict one.")
    if first.same_as == "`x`":
        return (f"{which} hold the values of `x`: the output was aliased from `x` instead of "
                f"the zeros. {_alias_fix(None)}")
    if first.same_as == "`scale * x`":
        missed = (f", and listed blocks {_blocks_text(wrong_listed)} were never written"
                  if wrong_listed else "")
        return (f"{which} hold `scale * x`: the kernel wrote blocks that are not listed{missed}. "
                "Are row and column swapped in your index map? It must return "
                "(blocks[i][0], blocks[i][1]), the row block first.")
    return f"{which} must be exactly 0, but block {first.index} holds {first.holds()}."


@pytest.mark.judge
@pytest.mark.points(3)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """Listed blocks hold `scale * x` and every other block is exactly 0, under the strict TPU interpreter"""
    cases = [_case(rng, shape, k) for shape, k in VALUE_CASES]
    with tpu_interpret(submission):
        for x, blocks, scale in cases:
            name = f"the result of {_head(x, blocks, scale)}"
            out = assert_is_array(_run(submission, x, blocks, scale), name)
            assert_dtype(out, np.float32, name)
            assert_shape(out, x.shape, name)
            sx = x * np.float32(scale)
            found = block_mismatches(out, _expected(x, blocks, scale), BLOCK, rtol=1e-6,
                                     known={"0": np.zeros_like(x), "`x`": x, "`scale * x`": sx})
            if found:
                moved = _moved(np.asarray(out), sx, found)
                fail(f"{_head(x, blocks, scale)}: {_explain(found, blocks, moved)}")


def _trace(submission: ModuleType, x: jax.Array, blocks: Blocks, scale: float) -> Any:
    """The trace of the learner's function on x alone, its static arguments fixed, which the judge reads and holds
    to a plain call at the same arguments (a file that shows one kernel to the trace and runs another fails)."""
    return traced(submission.block_sparse_scale, x, static=(blocks, scale))


def _when_line(calls: list[KernelCall], path: Path) -> int | None:
    """The learner's line of the first `cond` (a `pl.when`) in a kernel body, if any."""
    for call in calls:
        for eqn in call.jaxpr.eqns:
            if eqn.primitive.name == "cond":
                return learner_line(eqn, path) or -1
    return None


def _too_many_steps(calls: list[KernelCall], total: int, k: int, shape: tuple[int, int], path: Path) -> str:
    """Why a grid longer than the block list wastes work, shaped by what the kernel does."""
    grids = " + ".join(" x ".join(str(g) for g in c.grid) or "1" for c in calls)
    every = (shape[0] // BLOCK[0]) * (shape[1] // BLOCK[1])
    text = (f"for x of shape {shape} ({every} blocks) and {k} listed block(s), your grid runs "
            f"{total} steps ({grids}); it should run at most {k}, one per listed block. ")
    padded = _padded_table(calls, total, k)
    if padded is not None:
        return text + (f"It has one step per entry of {padded}, a table padded past the {k} listed "
                       "block(s): the padding steps still run, each copying a block in and out. "
                       "`blocks` is static, so every block list compiles its own kernel anyway and "
                       "a fixed-size table saves nothing. Make the table and the grid "
                       "`len(blocks)` long.")
    line = _when_line(calls, path)
    if line is not None:
        at = f" (line {line})" if line > 0 else ""
        return text + (f"Your kernel decides per block with `pl.when`{at}, but every step of the grid "
                       "still runs: its blocks are still copied in and out, and each step has a "
                       "fixed cost. Make the grid `(len(blocks),)` and let the index maps, reading "
                       "the block list by scalar prefetch, send step i to `blocks[i]`.")
    if total >= every:
        return text + ("A dense grid over every block (for example after masking `x` outside the "
                       "kernel) reads and writes all of memory to change a few blocks. Make the grid "
                       "`(len(blocks),)` and let the index maps send step i to `blocks[i]`.")
    return text + ("Each step copies a block in and out and has a fixed cost: make the grid "
                   "`(len(blocks),)` and let the index maps send step i to `blocks[i]`.")


def _padded_table(calls: list[KernelCall], total: int, k: int) -> str | None:
    """'`count_ref` (int32[64, 2])' when a scalar-prefetch table has one entry per grid step, more than k."""
    for call in calls:
        for name, var in zip(call.input_names[: call.num_index], call.jaxpr.invars, strict=False):
            shape = tuple(getattr(var.aval, "shape", ()))
            if shape and shape[0] == total and total > k:
                return f"`{name}` ({var.aval.dtype}{list(shape)})"
    return None


@pytest.mark.points(2)
@pytest.mark.judge
def test_grid_steps(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The grid has one step per listed block: at most `len(blocks)` steps in all"""
    for shape, k in (((32, 512), 3), ((16, 384), 1)):
        x, blocks, scale = _case(rng, shape, k)
        calls = pallas_calls(_trace(submission, jnp.asarray(x), blocks, scale), path=submission_path)
        check(calls, "`block_sparse_scale` makes no `pl.pallas_call`: the scaling must happen in "
                     "`block_scale_kernel`, called through `pl.pallas_call`.")
        steps = [c.grid_steps for c in calls]
        if None in steps:
            fail("your grid's size is known only at run time; make it `(len(blocks),)`, a Python int.")
        total = sum(s for s in steps if s is not None)
        if total > k:
            fail(_too_many_steps(calls, total, k, shape, submission_path))


@pytest.mark.points(2)
@pytest.mark.judge
def test_output_aliased(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The result is the kernel's output, aliased from a zero-filled input, with nothing after the kernel"""
    x, blocks, scale = _case(rng, (16, 384), 2)
    origins = output_origins(_trace(submission, jnp.asarray(x), blocks, scale), path=submission_path)
    check(len(origins) == 1, f"`block_sparse_scale` returns {len(origins)} arrays; return one.")
    origin = origins[0]
    if origin.kind == "op":
        fail(f"the result is made by {origin.describe()}, after the kernel: a second pass over the "
             "whole array rewrites the kernel's output. It moves as much memory as the kernel "
             "itself, and on a TPU it cannot even work: unvisited blocks hold whatever was in "
             "memory, not NaN, so `nan_to_num` or `where(isnan(...))` has nothing to find. Return "
             "the kernel's output, and make unvisited blocks 0 by aliasing a zeros operand onto it.")
    if origin.kind != "kernel":
        fail(f"the result is {origin.describe()}, not the output of a `pallas_call`: the scaling "
             "must happen in `block_scale_kernel`, called through `pl.pallas_call`.")
    if origin.aliased_input is None:
        fail(f"the result is {origin.describe()}, but that output is not aliased from any input, "
             "so the blocks the grid never visits are never initialized. Pass `jnp.zeros_like(x)` "
             "as an operand and alias it onto the output with `input_output_aliases={index: 0}`, "
             "where the index counts every operand, the scalar-prefetch table included.")
    if origin.aliased_from == "argument 0":
        fail(f"the output of the `pallas_call` is aliased from operand {origin.aliased_input}, "
             f"which is `x` itself, so unvisited blocks keep `x`'s values instead of 0. {_alias_fix(origin)}")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    for shape, blocks, scale in (((16, 384), ((0, 0), (1, 2)), 2.0), ((32, 512), ((3, 1),), 0.5)):
        trace = _trace(submission, jnp.zeros(shape, jnp.float32), blocks, scale)
        assert_lowers_for_tpu(trace, name="block_sparse_scale", path=submission_path)
