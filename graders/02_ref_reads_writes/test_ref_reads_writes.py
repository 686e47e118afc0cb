"""Grader for `ref_reads_writes`: values, loads and stores counted in kernel jaxprs, and a ref accumulator."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import check, fail, jitted_body, traced
from course.grading.judge.arrays import assert_array
from course.grading.observe.kernels.kernels import (
    KernelCall,
    describe_lines,
    kernel_call,
    learner_line,
    nested_primitive_counts,
    pallas_calls,
    primitive_counts,
)
from course.grading.observe.kernels.lowering import assert_lowers_for_tpu

# Arithmetic that a wrapper must leave to its kernel.
ARITHMETIC = frozenset({"add", "sub", "mul", "div", "neg", "max", "min", "integer_pow", "pow", "exp", "tanh",
                        "square", "add_any"})
# Reductions that would do `row_sum`'s work for it; a matmul with ones is a reduction too.
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "cumsum", "dot_general",
              "reduce_and", "reduce_or", "argmax", "argmin")
ADD_CASES = [((8, 128), jnp.float32), ((16, 256), jnp.float32), ((8, 128), jnp.bfloat16),
             ((3, 200), jnp.float32)]


def _draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: object = jnp.float32) -> jax.Array:
    """A random array of `shape` in `dtype`, drawn from this check's generator."""
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def _tolerance(dtype: object) -> dict[str, float]:
    """Tolerances that accept any correct order of operations in `dtype`."""
    if jnp.dtype(dtype) == jnp.bfloat16:
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 1e-5, "atol": 1e-5}


def _one_kernel(fn_name: str, calls: list[KernelCall]) -> KernelCall:
    """The single `pallas_call` of a wrapper, or a failure that says what was found instead."""
    check(calls, f"`{fn_name}` makes no `pl.pallas_call`: the work must happen inside a kernel, "
                 "so compute it in the kernel function and call that through `pl.pallas_call`.")
    check(len(calls) == 1, f"`{fn_name}` makes {len(calls)} `pallas_call`s; one is enough.")
    return calls[0]


def _counts_message(call: KernelCall, name: str, kind: str, found: list, want: int) -> str:
    """'`k` loads `x_ref` 3 times (lines 12, 12, 12); ...' for a count that is off."""
    lines = describe_lines(found)
    where = f" ({lines})" if lines else ""
    updates = [a for a in found if a.kind == "update"]
    if updates and len(found) > want:
        each = [("an `addupdate`" if a.kind == "update" else "a load" if kind == "load" else "a store")
                + (f" at line {a.line}" if a.line else "") for a in found]
        listed = ", ".join(each[:-1]) + f" and {each[-1]}"
        return (f"`{call.kernel_name}` {'reads' if kind == 'load' else 'writes'} `{name}` {len(found)} times: "
                f"{listed}. An `addupdate` reads the ref and writes it again, so storing part of the "
                "result and then adding the rest writes the output twice.")
    verb = "loads" if kind == "load" else "stores to"
    times = "once" if len(found) == 1 else f"{len(found)} times"
    wanted = "once" if want == 1 else f"{want} times"
    return f"`{call.kernel_name}` {verb} `{name}` {times}{where}; it should do so {wanted}."


def _assert_io(call: KernelCall, loads: dict[str, int], stores: dict[str, int]) -> None:
    """Fail unless each named kernel argument is loaded and stored exactly as often as given."""
    for name, want in loads.items():
        found = call.loads(name)
        if len(found) != want:
            advice = (" Every `ref[...]` is a load: read it once into a value and reuse the value."
                      if len(found) > want else " Read the input ref to get its value.")
            fail(_counts_message(call, name, "load", found, want) + advice)
    for name, want in stores.items():
        found = call.stores(name)
        if len(found) != want:
            fail(_counts_message(call, name, "store", found, want)
                 + " Compute the whole result as a value, then write it once with `o_ref[...] = ...`.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_add_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`add` returns x + y for float32 and bfloat16 arrays of several shapes"""
    for shape, dtype in ADD_CASES:
        x, y = _draw(rng, shape, dtype), _draw(rng, shape, dtype)
        want = (np.asarray(x, np.float32) + np.asarray(y, np.float32)).astype(jnp.dtype(dtype))
        got = submission.add(x, y)
        assert_array(got, want, name=f"add(x, y) for {jnp.dtype(dtype).name}{list(shape)}",
                     **_tolerance(dtype))


def _outside_kernels(jaxpr: Any, path: Path) -> list[tuple[str, int | None]]:
    """Arithmetic done by the wrapper itself, around its kernels: (primitive, learner line) in order."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            continue
        if eqn.primitive.name in ARITHMETIC:
            found.append((eqn.primitive.name, learner_line(eqn, path)))
        for sub in jex.core.jaxprs_in_params(eqn.params):
            found += _outside_kernels(getattr(sub, "jaxpr", sub), path)
    return found


def _assert_runs_own_kernel(sub: ModuleType, path: Path, wrapper: str, kernel: str, *args: jax.Array) -> KernelCall:
    """`wrapper` makes one `pallas_call`, of `kernel` (however wrapped), and computes nothing around it."""
    fn = getattr(sub, wrapper)
    call = _one_kernel(wrapper, pallas_calls(fn, *args, path=path))
    outside = _outside_kernels(traced(fn, *args).jaxpr, path)
    if outside:
        prim, line = outside[0]
        where = f" at line {line}" if line else ""
        fail(f"`{wrapper}` computes `{prim}`{where} outside its `pallas_call`: that part runs as ordinary "
             f"XLA around the kernel, reading its inputs from memory again. The whole computation belongs "
             f"in `{kernel}`.")
    own = kernel_call(getattr(sub, kernel), *args, out_shape=jax.ShapeDtypeStruct(args[0].shape, args[0].dtype),
                      path=path)
    if call.primitives() != own.primitives():
        fail(f"the `pallas_call` in `{wrapper}` runs `{call.kernel_name}`, which does not compute what "
             f"`{kernel}` computes (its body holds {_summary(call)}, `{kernel}`'s holds {_summary(own)}). "
             f"Pass `{kernel}` itself to `pl.pallas_call`.")
    return call


def _summary(call: KernelCall) -> str:
    """The kernel body's primitives, e.g. `2 get, 1 mul, 1 swap`."""
    counts = call.primitives()
    return ", ".join(f"{n} {p}" for p, n in sorted(counts.items())) or "nothing"


@pytest.mark.judge
def test_add_in_pallas_call(submission: ModuleType, submission_path: Path) -> None:
    """`add` runs `add_kernel` for the whole addition, not around it"""
    x, y = jnp.ones((8, 128)), jnp.ones((8, 128))
    call = _assert_runs_own_kernel(submission, submission_path, "add", "add_kernel", x, y)
    counts = primitive_counts(traced(submission.add, x, y))
    check(counts["add"] or counts["add_any"] or counts["addupdate"],
          f"`add_kernel` never adds (its body holds {_summary(call)}): it must compute `x + y`, with "
          "`+` or `jnp.add`.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_add_kernel_loads_and_stores(submission: ModuleType, submission_path: Path) -> None:
    """`add_kernel` loads each input once and stores the output once"""
    x = jnp.ones((8, 128))
    call = kernel_call(submission.add_kernel, x, x, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                       path=submission_path)
    x_name, y_name = call.input_names
    (o_name,) = call.output_names
    _assert_io(call, loads={x_name: 1, y_name: 1}, stores={o_name: 1})


@pytest.mark.judge
def test_square_plus_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`square_plus` returns x * x + x"""
    for shape in ((8, 128), (16, 256)):
        x = _draw(rng, shape)
        xn = np.asarray(x)
        assert_array(submission.square_plus(x), xn * xn + xn, name=f"square_plus(x) for {list(shape)}",
                     rtol=1e-5, atol=1e-5)


@pytest.mark.judge
def test_square_plus_in_pallas_call(submission: ModuleType, submission_path: Path) -> None:
    """`square_plus` runs `square_plus_kernel` for the whole computation"""
    _assert_runs_own_kernel(submission, submission_path, "square_plus", "square_plus_kernel", jnp.ones((8, 128)))


@pytest.mark.judge
@pytest.mark.points(2)
def test_square_plus_one_load(submission: ModuleType, submission_path: Path) -> None:
    """`square_plus_kernel` loads `x_ref` once and stores `o_ref` once"""
    x = jnp.ones((8, 128))
    call = kernel_call(submission.square_plus_kernel, x, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                       path=submission_path)
    (x_name,) = call.input_names
    (o_name,) = call.output_names
    _assert_io(call, loads={x_name: 1}, stores={o_name: 1})


@pytest.mark.judge
def test_row_sum_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`row_sum` returns the sum of the rows, of shape (columns,)"""
    for shape in ((8, 128), (1, 128), (13, 256)):
        x = _draw(rng, shape)
        want = np.asarray(x).sum(axis=0, dtype=np.float64).astype(np.float32)
        assert_array(submission.row_sum(x), want, name=f"row_sum(x) for {list(shape)}",
                     rtol=1e-5, atol=1e-4)


def _counts_inside_jit(fn: Any, x: jax.Array, closed: Any) -> Counter[str]:
    """Primitives that run inside `jax.jit` when `fn(x)` is called (`closed` is its trace).

    A jitted `fn` runs its whole body inside the jit, even one built with `inline=True`, which
    leaves no `jit` equation in a jaxpr traced around it: ask the jitted object for its own trace.
    """
    body = jitted_body(fn, x)
    return primitive_counts(body) if body is not None else nested_primitive_counts(closed, within="jit")


@pytest.mark.judge
def test_row_sum_accumulates_in_ref(submission: ModuleType) -> None:
    """`row_sum` accumulates into a `jax.new_ref` inside `jax.jit`"""
    x = jnp.ones((8, 128))
    closed = traced(submission.row_sum, x)
    inside = _counts_inside_jit(submission.row_sum, x, closed)
    if not inside["new_ref"]:
        where = ("outside `jax.jit`" if primitive_counts(closed)["new_ref"]
                 else "nowhere: no `jax.new_ref` was made")
        fail(f"`row_sum` creates its accumulator {where}. Decorate `row_sum` with `@jax.jit` "
             "and create the accumulator with `jax.new_ref(...)` inside it.")
    writes = inside["swap"] + inside["addupdate"]
    check(writes, "`row_sum` never writes its ref; add each row into it with `acc[...] += row` "
                  "or `acc.addupdate(row)`.")


@pytest.mark.judge
def test_row_sum_freezes(submission: ModuleType) -> None:
    """`row_sum` returns `jax.freeze` of its accumulator"""
    closed = traced(submission.row_sum, jnp.ones((8, 128)))
    check(primitive_counts(closed)["freeze"],
          "`row_sum` never calls `jax.freeze`; reading the ref with `acc[...]` copies it and keeps "
          "it mutable. Return `jax.freeze(acc)`: it turns the ref into an array and ends its life.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_row_sum_no_reduction(submission: ModuleType) -> None:
    """`row_sum` adds the rows itself; no reduction primitive does it"""
    counts = primitive_counts(traced(submission.row_sum, jnp.ones((8, 128))))
    used = [p for p in REDUCTIONS if counts[p]]
    check(not used, f"`row_sum` uses {', '.join(f'`{p}`' for p in used)}, a reduction that does the "
                    "summing for you (e.g. `jnp.sum` or a matmul). Add the rows into the ref one by one.")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    for shape, dtype in ((8, 128), jnp.float32), ((16, 256), jnp.bfloat16):
        x = jax.ShapeDtypeStruct(shape, dtype)
        assert_lowers_for_tpu(submission.add, x, x, name="add", path=submission_path)
        assert_lowers_for_tpu(submission.square_plus, x, name="square_plus", path=submission_path)
