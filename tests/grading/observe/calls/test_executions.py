"""Tests of `observe.calls.executions`: which compiled programs ran, at which argument types."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import pjit

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.executions import RunRecorder, record_runs


def _rows(n: int) -> jax.Array:
    """A float32 (n, 4) input made without compiling anything."""
    return jax.device_put(np.ones((n, 4), np.float32))


def test_cached_calls_of_a_module_jit_are_recorded() -> None:
    """A call that hits the compile cache is still seen, with the shapes it ran at."""
    def halve(x):
        """A fresh function, so no earlier test compiled it."""
        return x / 2

    f = jax.jit(halve)
    f(_rows(8))  # warm: this entry would now be dispatched from C++ without Python
    with record_runs({"halve"}) as rec, CompileRecorder({"halve"}) as compiles:
        for n in (8, 8, 16):
            f(_rows(n))
        jnp.pad(_rows(3), ((0, 1), (0, 0)))  # an eager helper of another name
    assert rec.fun_names() == ["jit(halve)"] * 3
    assert compiles.count() == 1  # only the new shape: recording recompiles nothing
    assert [r.shapes for r in rec.runs] == [((8, 4),), ((8, 4),), ((16, 4),)]
    assert rec.runs[-1].largest_size() == 64


def test_jits_in_a_dict_and_aot_programs_are_recorded() -> None:
    """A jit built lazily into a dict and an AOT-compiled program both count as executions."""
    def triple(x):
        """The learner's program."""
        return x * 3

    jits: dict[int, object] = {}
    spec = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    compiled = jax.jit(triple).lower(spec).compile()
    with RunRecorder(["triple"]) as rec:
        for n in (16, 32):
            jits.setdefault(n, jax.jit(triple))(_rows(n))
        compiled(_rows(16))
    assert rec.fun_names() == ["jit(triple)"] * 3
    assert [r.shapes[0][0] for r in rec.runs] == [16, 32, 16]


def test_weak_types_are_kept_and_traced_calls_are_not_executions() -> None:
    """The recorded types say whether a scalar was weakly typed; a call inside a trace runs nothing."""
    def scale(x, t):
        """A program taking a scalar."""
        return x * t

    f = jax.jit(scale)
    outer = jax.jit(lambda x: f(x, 2.0))
    with record_runs({"scale"}) as rec:
        f(_rows(4), 2.0)
        f(_rows(4), np.float32(2.0))
        outer(_rows(4))  # `f` is traced into `outer` here, not run
    assert [r.arg_types[1].weak_type for r in rec.runs] == [True, False]


def test_fast_dispatch_is_restored_after_recording() -> None:
    """JAX's private hooks are put back, and cached calls are fast again afterwards."""
    original = pjit._get_fastpath_data
    f = jax.jit(lambda x: x + 1)
    x = _rows(4)
    with record_runs():
        assert pjit._get_fastpath_data is not original
        recorded = _seconds_per_call(f, x)
    assert pjit._get_fastpath_data is original
    f(x)
    assert _seconds_per_call(f, x) < recorded / 2  # about 5 us against 50 us when recorded


def _seconds_per_call(f: object, x: jax.Array) -> float:
    """Median time of a cached call of `f(x)`, over a few batches."""
    f(x)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            f(x)
        times.append((time.perf_counter() - start) / 20)
    return sorted(times)[2]
