"""Grader for `shard_and_reduce`: the mesh, the placement, and a mean reduced block by block with one psum."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    assert_array,
    assert_is_array,
    assert_mesh,
    assert_sharding,
    call_explained,
    differing_copies,
    fail,
    hlo_collectives,
    jaxpr_collectives,
    shard_shapes,
    sharding_text,
    spec_text,
    traced_once,
    walk_eqns,
)

BOTH = ("x", "y")
REDUCING = ("psum", "psum_invariant")


def _mesh() -> jax.sharding.Mesh:
    """The grader's own 2x4 Explicit mesh, so a wrong `make_mesh` fails only its own check."""
    return jax.make_mesh((2, 4), BOTH, axis_types=(AxisType.Explicit,) * 2)


def _shapes(rng: np.random.Generator) -> list[tuple[int, int]]:
    """(R, C) with R a multiple of 2 and C of 4: the smallest, a random one, a tall and a wide one."""
    return [(2, 4), (2 * int(rng.integers(2, 8)), 4 * int(rng.integers(2, 6))), (16, 8), (4, 64)]


def _data(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """float32 values around a random offset, so that the mean is not close to zero."""
    return rng.normal(rng.uniform(-4, 4), 2.0, shape).astype(np.float32)


def _sharded(rng: np.random.Generator, shape: tuple[int, int], mesh: jax.sharding.Mesh) -> tuple[jax.Array, np.ndarray]:
    """An array sharded P('x', 'y') by the grader (not by the learner's `place`) and its NumPy values."""
    data = _data(rng, shape)
    return jax.device_put(data, NamedSharding(mesh, P(*BOTH))), data


def _case(sub: ModuleType, path: Path, x: jax.Array, mesh: jax.sharding.Mesh) -> Any:
    """`global_mean(x, mesh)` traced, compiled and run once (`traced_once`, with tracing mistakes explained): its
    trace and its compiled program's text, which a judge's check reads."""
    return traced_once(sub.global_mean, x, static=(mesh,), name="`global_mean`", path=path)


@pytest.mark.judge
@pytest.mark.points(1)
def test_mesh(submission: ModuleType) -> None:
    """`make_mesh()` is a 2x4 mesh over all 8 devices, axes ('x', 'y'), both Explicit."""
    assert_mesh(submission.make_mesh(), shape=(2, 4), names=BOTH, name="`make_mesh()`")


@pytest.mark.judge
@pytest.mark.points(2)
def test_place(submission: ModuleType, rng: np.random.Generator) -> None:
    """`place` keeps the values and shards them P('x', 'y'): each device holds an (R/2, C/4) block."""
    mesh = _mesh()
    for rows, cols in _shapes(rng):
        data = _data(rng, (rows, cols))
        name = f"`place(x, mesh)` for {[rows, cols]}"
        got = assert_array(submission.place(jax.device_put(data), mesh), data, name=name)
        held = sorted(set(shard_shapes(got)))
        assert_sharding(got, NamedSharding(mesh, P(*BOTH)), name=name,
                        hint=f"Rows go over 'x' and columns over 'y', so each of the 8 devices holds a "
                             f"{(rows // 2, cols // 4)} block; yours hold {', '.join(map(str, held))}.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_traceable(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`global_mean` can be traced: it runs under `jax.jit` and `jax.make_jaxpr`."""
    mesh = _mesh()
    x, _ = _sharded(rng, (4, 8), mesh)
    assert_is_array(_case(submission, submission_path, x, mesh).out, "`global_mean(x, mesh)` under `jax.jit`")


@pytest.mark.judge
@pytest.mark.points(2)
def test_mean_values(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`global_mean` returns the mean of all R x C elements as a float32 scalar."""
    mesh = _mesh()
    for shape in _shapes(rng)[:3]:
        x, data = _sharded(rng, shape, mesh)
        want = data.astype(np.float64).mean()
        name = f"`global_mean(x, mesh)` for {list(shape)}"
        # Under jax.jit, beside the code; the judge sees only what it returns.
        got = call_explained(submission.global_mean, x, mesh, name="`global_mean`", path=submission_path)
        assert_is_array(got, name)
        if got.shape == () and got.dtype == np.float32 and not np.isclose(float(got), want, rtol=1e-5, atol=1e-5):
            fail(f"{name} is {float(got):.6g}, expected {want:.6g}. {_why_off(float(got), data)}")
        assert_array(got, np.float32(want), name=name, rtol=1e-5, atol=1e-5)


def _why_off(got: float, data: np.ndarray) -> str:
    """A guess, from the ratio to the true sum, at which count was used or which devices were summed."""
    total = data.astype(np.float64).sum()
    rows, cols = data.shape
    mean = total / data.size
    guesses = {
        total / (rows * cols / 8): "That is the sum divided by one device's element count: divide by the "
                                   "global count R * C (x.size outside the shard_map).",
        total / 8: "That is the sum divided by the number of devices, not the number of elements.",
        mean / 8: "That is the mean divided by 8, the device count: `lax.pmean` already divides by the 8 "
                  "devices, so a pmean of the block sums is total / 8, and dividing that by R * C divides "
                  "by the devices twice. Either psum the block sums and divide by R * C, or pmean the block "
                  "means (each block's sum over its own element count).",
        mean * 8: "That is 8 times the mean: a psum of the block means adds 8 means. Average them with "
                  "`lax.pmean`, or psum the block sums and divide by R * C.",
        float(data[: rows // 2, : cols // 4].astype(np.float64).mean()): "That is the mean of device 0's block "
                                                                        "alone: no psum reached the other devices.",
        data[:, : cols // 4].astype(np.float64).sum() / data.size: "That adds only the blocks along 'x' (one "
                                                                    "column of devices): psum over ('x', 'y').",
        data[: rows // 2].astype(np.float64).sum() / data.size: "That adds only the blocks along 'y' (one row "
                                                                 "of devices): psum over ('x', 'y').",
    }
    for value, why in guesses.items():
        # A guess the right answer also equals (at [2, 4], 8 elements on 8 devices, the sum over 8 is the mean)
        # says nothing: a value rounded near the mean would be blamed on a count it did not use.
        if np.isclose(got, value, rtol=1e-4, atol=1e-5) and not np.isclose(value, mean, rtol=1e-6, atol=0):
            return why
    if abs(got - mean) <= 2e-2 * float(np.abs(data).mean()):
        return ("That is close, but rounded: partial sums of a dtype narrower than float32 (bfloat16 keeps about "
                "3 significant digits) are rounded before they travel, and the mean is off. Sum the block and "
                "psum it in float32 (a narrower dtype saves bytes only where precision is not needed).")
    return "Sum each block, psum the partial sums over both axes, and divide by the global count."


@pytest.mark.judge
@pytest.mark.points(1)
def test_mean_replicated(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The mean is one scalar that every device of the mesh holds, the same on each (sharding P())."""
    mesh = _mesh()
    x, _ = _sharded(rng, (8, 16), mesh)
    got = assert_is_array(call_explained(submission.global_mean, x, mesh, name="`global_mean`", path=submission_path),
                          "`global_mean(x, mesh)`")
    if got.shape != () and got.size == 1:
        fail(f"`global_mean(x, mesh)` has shape {got.shape}, sharded {sharding_text(got)}; a mean is a scalar, "
             "shape (). Its replication is right; only the shape is not: sum the block to a scalar "
             "(`jnp.sum(block)`, without keepdims), or index or reshape the result to ().")
    if got.shape != ():
        fail(f"`global_mean(x, mesh)` has shape {got.shape}, sharded {sharding_text(got)}: each device contributes "
             "its own piece to a bigger array. A mean is one scalar that every device holds whole: out_specs=P(), "
             "which JAX accepts once the psum covers both axes.")
    assert_sharding(got, NamedSharding(mesh, P()), name="`global_mean(x, mesh)`",
                    hint="Every device should end with the same scalar: `out_specs=P()` after a psum over both axes.")
    if not got.sharding.is_fully_replicated or len(got.sharding.device_set) != 8:
        fail(f"`global_mean(x, mesh)` is held by {len(got.sharding.device_set)} device(s) ({sharding_text(got)}); "
             "every one of the 8 should hold the scalar.")
    differ = differing_copies(got)
    if differ:
        fail(f"`global_mean(x, mesh)` is sharded P(), but the devices hold different values: {differ}. The "
             "sharding only claims replication (check_vma=False stops JAX from checking the claim); each "
             "device's copy is what that device computed. A psum over every mesh axis, ('x', 'y'), gives all "
             "8 the same total, and nothing after it may depend on which device runs (`lax.axis_index`).")


def _shard_maps(closed: Any) -> list[Any]:
    """The `shard_map` equations of a jaxpr, outermost first."""
    return [eqn for eqn, _ in walk_eqns(closed) if eqn.primitive.name == "shard_map"]


@pytest.mark.judge
@pytest.mark.points(2)
def test_shard_map_blocks(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`global_mean` runs a `jax.shard_map` that takes x as its P('x', 'y') blocks."""
    mesh = _mesh()
    x, _ = _sharded(rng, (8, 16), mesh)
    maps = _shard_maps(_case(submission, submission_path, x, mesh).jaxpr)
    if not maps:
        fail("`global_mean` has no `jax.shard_map`. `jnp.mean` on the sharded array gives the right number "
             "(XLA inserts the all-reduce for you), but this exercise is about writing it: sum each "
             "device's block inside `jax.shard_map(..., in_specs=P('x', 'y'))`, then psum.")
    want = NamedSharding(mesh, P(*BOTH))
    specs = [spec for eqn in maps for spec, var in zip(eqn.params["in_specs"], eqn.invars, strict=False)
             if len(getattr(var.aval, "shape", ())) == 2]
    if not any(NamedSharding(mesh, spec).is_equivalent_to(want, 2) for spec in specs):
        seen = ", ".join(spec_text(s) for s in specs) or "no 2-D input"
        fail(f"the `shard_map` in `global_mean` takes x as {seen}, not P('x', 'y'). With P() every device "
             "receives the whole array, so x is gathered first: R x C floats copied to each device to "
             "compute one number. Take the blocks where they already are: in_specs=P('x', 'y').")


@pytest.mark.judge
@pytest.mark.points(2)
def test_psum_both_axes(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Inside the `shard_map`, a `psum` (or `pmean`) of one partial sum per device covers both mesh axes."""
    mesh = _mesh()
    x, _ = _sharded(rng, (8, 16), mesh)
    found = jaxpr_collectives(_case(submission, submission_path, x, mesh).jaxpr, path=submission_path)
    gathers = [c for c in found if c.primitive.startswith("all_gather")]
    if gathers:
        fail(f"`global_mean` calls `all_gather`{_at(gathers[0].line)}: every block then travels to every "
             "device, to be summed there. Sum the block locally and psum the scalar instead.")
    summed = {a for c in found if c.primitive in REDUCING for a in c.axes}
    if not summed:
        fail("`global_mean` makes no `psum` (nor `pmean`): each device only knows its own block's sum. "
             "Add `lax.psum(partial_sum, ('x', 'y'))`.")
    missing = [a for a in BOTH if a not in summed]
    if missing:
        line = next(c.line for c in found if c.primitive in REDUCING)
        fail(f"the psum in `global_mean`{_at(line)} runs over {tuple(sorted(summed))} only, so the devices "
             f"along {tuple(missing)} never add their partial sums: psum over ('x', 'y').")
    block = (x.shape[0] // 2) * (x.shape[1] // 4)
    for c in (c for c in found if c.primitive in REDUCING and c.elements != 1):
        shapes = ", ".join(str(shape) for shape in c.shapes)
        if c.elements >= block:
            fail(f"the psum in `global_mean`{_at(c.line)} adds whole blocks of {shapes} elementwise across "
                 "devices, sending every element; sum the block on its device first, so that only one number "
                 "per device travels.")
        fail(f"the {c.lax_name} in `global_mean`{_at(c.line)} adds {c.elements} numbers per device ({shapes}), "
             f"where a mean needs one: the block of {block} elements should be summed to a scalar on its "
             "device first (`jnp.sum(block)`, every axis). Only that partial sum needs to travel; a count is "
             "known while tracing (x.size), so it never needs to.")


def _at(line: int | None) -> str:
    """' (line N)' when the learner's line is known."""
    return f" (line {line})" if line else ""


@pytest.mark.judge
@pytest.mark.points(1)
def test_hlo_all_reduce_only(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The compiled program communicates with all-reduce only: no all-gather, all-to-all or collective-permute."""
    mesh = _mesh()
    x, _ = _sharded(rng, (8, 16), mesh)
    ops = hlo_collectives(_case(submission, submission_path, x, mesh).hlo)
    others = {op: n for op, n in ops.items() if op != "all-reduce"}
    if others:
        listed = ", ".join(f"{n} {op}" for op, n in sorted(others.items()))
        fail(f"the compiled `global_mean` runs {listed} (and {ops['all-reduce']} all-reduce); a mean needs "
             "only one all-reduce of the scalar partial sums. A gather moves whole blocks between devices: "
             "resharding x to P() or calling all_gather does that.")
    if not ops["all-reduce"]:
        fail("the compiled `global_mean` has no all-reduce: the devices never combined their partial sums.")
