"""Grader for `multi_process`, run by each of 2 processes at once (`processes = 2`): each loads only its own
rows, builds one global array over the 4 devices of both, and reduces it with a collective both enter.

Every process draws the same dataset (the seed is the run's), so each knows every row and can check the
shards it holds; the checks themselves never communicate: only the learner's functions do, in the same
order on every process, so a mistake in one process cannot leave the grader waiting in the other.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    RowLog,
    assert_is_array,
    describe_exception,
    fail,
    own_rows,
    rows_text,
    shard_mismatches,
    sharding_text,
    step,
)
from course.grading.observe.calls.there import in_executor

AXIS = "data"
ROWS, FEATURES = 64, 8  # 16 rows per device; a row has 8 features
END_ROWS = 48  # end to end, another size: 12 rows per device
UNEVEN_ROWS = 67  # `load_shard` alone, for 2 and 3 processes: neither divides it, so floor division loses rows
BUILD = "jax.make_array_from_process_local_data(NamedSharding(mesh, P('data')), local_rows)"


def _dataset(rng: np.random.Generator, rows: int = ROWS) -> np.ndarray:
    """The whole dataset, the same in every process (the seed is the run's); rows differ by their offset."""
    return (rng.standard_normal((rows, FEATURES)) + np.arange(rows)[:, None]).astype(np.float32)


def _mesh() -> Mesh:
    """The 1-D mesh 'data' over every device of every process."""
    return Mesh(np.array(jax.devices()), (AXIS,))


def _me() -> tuple[int, int]:
    """(this process's index, the number of processes)."""
    return jax.process_index(), jax.process_count()


def _global(data: np.ndarray, mesh: Mesh) -> jax.Array:
    """The grader's own global array of `data`, sharded P('data'), built from this process's rows."""
    i, p = _me()
    mine = own_rows(len(data), i, p)
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P(AXIS)), data[mine.start:mine.stop])


def _called(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in the step `name`, waited for there (a collective that never completes hangs inside the
    step that started it); JAX's refusals of a multi-process mistake become what they mean."""
    with step(name):
        try:
            return jax.block_until_ready(fn(*args))
        except (RuntimeError, AssertionError, ValueError) as exc:
            text = str(exc)
            if "is not the same on each process" in text:
                fail(f"`{name}` called `jax.device_put` with this process's rows: `device_put` wants the whole "
                     "array, the same on every process, and each process has only its own rows, so JAX refused "
                     f"({describe_exception(exc)[:160]}…). Build the global array from the local rows: {BUILD}")
            if "spans non-addressable" in text:
                fail(f"`{name}` asked for the whole global array on the host (`np.asarray(x)`, say), but no "
                     "process holds all of it: JAX refused. Compute with `jnp` on the global "
                     "array (`jnp.mean(x, axis=0)`): every process runs it on its own shards, and the sum over "
                     "the rows becomes one all-reduce between the processes")
            raise


def _read_rows_message(log: RowLog, mine: range, i: int) -> str:
    """What is wrong with the rows process `i` read, or ''."""
    read = log.rows()
    outside = sorted(set(read) - set(mine))
    missing = sorted(set(mine) - set(read))
    owned = f"process {i} owns rows {mine.start}-{mine.stop - 1}"
    if outside and not missing:
        return (f"`load_shard` read rows {rows_text(read)} ({log.calls_text()}); {owned}, and read the others' "
                "too. Each process reads only its own block, so no row is read twice in the whole job")
    if outside:
        return (f"`load_shard` read rows {rows_text(read)} ({log.calls_text()}), but {owned}: "
                f"rows {rows_text(missing)} were never read. Read the contiguous block "
                "[i·n/p, (i+1)·n/p), which lands on this process's devices")
    if missing:
        return (f"`load_shard` read rows {rows_text(read) if read else 'none'} ({log.calls_text()}), but {owned}: "
                f"rows {rows_text(missing)} were never read. Every process reads its own rows; none waits for "
                "another to read them for it")
    if len(read) != len(set(read)):
        return f"`load_shard` read some of its rows more than once ({log.calls_text()}): read each row once"
    return ""


@pytest.mark.judge
@pytest.mark.points(1)
def test_imports(submission: ModuleType) -> None:
    """The file imports in every process, which the grader has already joined with `jax.distributed`."""
    for name in ("load_shard", "global_batch", "global_mean"):
        if not callable(getattr(submission, name, None)):
            fail(f"the file defines no function `{name}`")


@pytest.mark.judge
@pytest.mark.points(2)
def test_reads_own_rows(submission: ModuleType, rng: np.random.Generator) -> None:
    """Each process reads its own contiguous rows, all of them and no others, and returns them."""
    data, (i, p) = _dataset(rng), _me()
    mine = own_rows(ROWS, i, p)
    got, log = _loaded(submission, data, i, p)
    wrong = _read_rows_message(log, mine, i)
    if wrong:
        fail(wrong)
    got = np.asarray(got)
    want = data[mine.start:mine.stop]
    if got.shape != want.shape or not np.array_equal(got, want):
        fail(f"`load_shard` on process {i} read rows {rows_text(log.rows())} but returned an array of shape "
             f"{got.shape} that is not those rows in order (want {want.shape})")
    for n, count in ((UNEVEN_ROWS, p), (UNEVEN_ROWS, 3)):
        wrong = _uneven_message(submission, _dataset(rng, n), count)
        if wrong:
            fail(wrong)


def _loaded(submission: ModuleType, data: np.ndarray, i: int, p: int) -> tuple[Any, RowLog]:
    """`load_shard(read_rows, len(data), i, p)` with the grader's reader over `data`: what it returned, and the
    reader's record of the rows asked for, rebuilt here from the process that made the call."""
    got, calls = _load_there(submission, data, i, p)
    if not isinstance(calls, list | tuple) or not all(
            isinstance(c, list | tuple) and len(c) == 2 and all(type(v) is int for v in c) for c in calls):
        fail("the record of `load_shard`'s reads came back malformed, which no call of `load_shard` makes.")
    log = RowLog(data)
    log.calls.extend((start, stop) for start, stop in calls)
    return got, log


@in_executor
def _load_there(submission: ModuleType, data: np.ndarray, i: int, p: int) -> tuple[Any, list[list[int]]]:
    """The call of `load_shard` with the grader's reader, made where the learner's code runs (the reader is the
    grader's function, handed to theirs): its result and every (start, stop) it asked for."""
    log = RowLog(data)
    got = _called("load_shard", submission.load_shard, log, len(data), i, p)
    return got, [[int(start), int(stop)] for start, stop in log.calls]


def _uneven_message(submission: ModuleType, data: np.ndarray, count: int) -> str:
    """What is wrong with `load_shard` called for every process of `count` over rows `count` does not divide, or ''."""
    n, reads = len(data), []
    for j in range(count):
        got, log = _loaded(submission, data, j, count)
        got = np.asarray(got)
        reads.append(log.rows())
        mine = own_rows(n, j, count)
        if sorted(set(log.rows())) == list(mine) and np.array_equal(got, data[mine.start:mine.stop]):
            continue
        lost = sorted(set(range(n)) - {r for rows in reads for r in rows} - set(range(mine.stop, n)))
        told = f"with {n} rows over {count} processes (a count that does not divide {n}), process {j}"
        if lost or not log.rows():
            return (f"{told} read rows {rows_text(log.rows())}, and rows {rows_text(lost or list(mine))} are read by "
                    f"no process: `n // p` rows each drops the last n % p rows. Give process i the rows "
                    "[i * n // p, (i + 1) * n // p), which cover every row whatever p is")
        return (f"{told} read rows {rows_text(log.rows())} and returned {got.shape}; it owns rows "
                f"{mine.start}-{mine.stop - 1}, [i * n // p, (i + 1) * n // p)")
    return ""


def _assert_global(x: Any, data: np.ndarray, mesh: Mesh, name: str) -> jax.Array:
    """Fail unless `x` is `data` as a global array over every device, sharded P('data'), each shard right."""
    x = assert_is_array(x, name)
    devices, want = len(x.sharding.device_set), NamedSharding(mesh, P(AXIS))
    if x.shape != data.shape:
        fail(f"{name} is a {x.shape} array on {devices} device{'s' if devices != 1 else ''}: "
             f"{'the rows of this process only' if x.shape[0] * jax.process_count() == len(data) else 'not the batch'}"
             f". A global array has the whole batch's shape, {data.shape}, over the devices of every process, "
             f"each holding its own rows: {BUILD}")
    if x.is_fully_addressable or devices != mesh.size:
        fail(f"{name} has the right shape but lives on {devices} device(s) this process can address alone: a "
             f"mesh of `jax.local_devices()`? Use the mesh you are given, over all {mesh.size} devices")
    if not x.sharding.is_equivalent_to(want, x.ndim):
        fail(f"{name} is laid out as {sharding_text(x)}, not P('data'): each device should hold its own block of rows")
    wrong = shard_mismatches(x, data, rtol=0, atol=0)
    if wrong:
        shown = ", ".join(f"device {w.device} holds {w.block} wrong" for w in wrong[:3])
        fail(f"{name} is global and sharded right, but {shown}: a shard must hold the dataset's rows at its "
             "index (this process's rows, in order, on its own devices)")
    return x


@pytest.mark.judge
@pytest.mark.points(2)
def test_global_batch(submission: ModuleType, rng: np.random.Generator) -> None:
    """`global_batch` gives one (n, F) array over the 4 devices of both processes, P('data'), each shard its rows."""
    data, (i, p), mesh = _dataset(rng), _me(), _mesh()
    mine = own_rows(ROWS, i, p)
    got = _called("global_batch", submission.global_batch, data[mine.start:mine.stop].copy(), mesh)
    _assert_global(got, data, mesh, "`global_batch(local_rows, mesh)`")


def _assert_mean(m: Any, data: np.ndarray, mesh: Mesh, name: str) -> None:
    """Fail unless `m` is the (F,) mean of every row of `data`, replicated on every device, right on each."""
    m = assert_is_array(m, name)
    want = data.astype(np.float64).mean(axis=0)
    if m.shape != want.shape:
        fail(f"{name} has shape {m.shape}; the per-feature mean has shape {want.shape}")
    i, p = _me()
    mine = own_rows(len(data), i, p)
    for shard in m.addressable_shards:
        held = np.asarray(shard.data, dtype=np.float64)
        if np.allclose(held, want, rtol=1e-5, atol=1e-5):
            continue
        if np.allclose(held, data[mine.start:mine.stop].mean(axis=0), rtol=1e-5, atol=1e-4):
            fail(f"{name} on process {i} holds the mean of this process's {len(mine)} rows only, not of all "
                 f"{len(data)}: the array it was given was not global, or only this process's part of it was used")
        if not held.any():
            fail(f"{name} on device {shard.device.id} holds zeros, not the mean of all {len(data)} rows: does "
                 "this process skip the mean (`if jax.process_index() == 0:`)? Every process must compute it")
        fail(f"{name} on device {shard.device.id} holds {np.round(held[:3], 3).tolist()}…, not the mean of all "
             f"{len(data)} rows ({np.round(want[:3], 3).tolist()}…): is it the mean of one device's rows "
             "(`x.addressable_shards[0]`)?")
    if len(m.sharding.device_set) != mesh.size or not m.sharding.is_fully_replicated:
        fail(f"{name} has the right values but lives on {len(m.sharding.device_set)} device(s) as "
             f"{sharding_text(m)}: the mean must be replicated on all {mesh.size} devices of both processes")


@pytest.mark.judge
@pytest.mark.points(2)
def test_global_mean(submission: ModuleType, rng: np.random.Generator) -> None:
    """`global_mean` is right on every device of every process, and replicated."""
    data, mesh = _dataset(rng), _mesh()
    got = _called("global_mean", submission.global_mean, _global(data, mesh))
    _assert_mean(got, data, mesh, "`global_mean(x)`")


@pytest.mark.judge
@pytest.mark.points(1)
def test_end_to_end(submission: ModuleType, rng: np.random.Generator) -> None:
    """Loading, building and reducing another dataset end to end gives its mean on every device."""
    data, (i, p), mesh = _dataset(rng, END_ROWS), _me(), _mesh()
    local, _ = _loaded(submission, data, i, p)
    x = _called("global_batch", submission.global_batch, np.asarray(local), mesh)
    _assert_mean(_called("global_mean", submission.global_mean, x), data, mesh,
                 "`global_mean(global_batch(load_shard(...), mesh))`")
