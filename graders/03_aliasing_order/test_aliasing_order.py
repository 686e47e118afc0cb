"""Grader for `aliasing_order`: kernels correct when input and output are one buffer, declared and donated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed, check, fail
from course.grading.judge.arrays import assert_array
from course.grading.observe.calls.donation import assert_consumed, jit_calls
from course.grading.observe.calls.patching import JitBuilds
from course.grading.observe.calls.warmup import unreported_compiles, watched_calls
from course.grading.observe.kernels.aliasing import hazard_message, run_aliased
from course.grading.observe.kernels.kernels import pallas_calls
from course.grading.observe.kernels.lowering import assert_lowers_for_tpu

SHAPES = ((8, 128), (16, 256))
WRAPPERS = ("swap_halves", "residual_tanh")


def _draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random float32 values drawn from this check's generator."""
    return rng.standard_normal(shape).astype(np.float32)


def _swapped(x: np.ndarray) -> np.ndarray:
    """The expected `swap_halves` result."""
    n = x.shape[1] // 2
    return np.concatenate([x[:, n:], x[:, :n]], axis=1)


def _residual(x: np.ndarray) -> np.ndarray:
    """The expected `residual_tanh` result."""
    return np.tanh(x) + x


def _check_wrapper(fn: Callable[[jax.Array], Any], name: str, expect: Callable, rng: np.random.Generator) -> None:
    """Call a wrapper on fresh inputs (it may donate them) and compare with NumPy."""
    for shape in SHAPES:
        data = _draw(rng, shape)
        assert_array(fn(jnp.asarray(data)), expect(data), name=f"{name}(x) for {list(shape)}",
                     rtol=1e-5, atol=1e-5)


def _check_aliased(submission: ModuleType, name: str, expect: Callable, rng: np.random.Generator,
                   path: Path) -> None:
    """Run the kernel with `x_ref` and `o_ref` as one ref; on a wrong value, say which read saw a write."""
    kernel = getattr(submission, name)
    for shape in SHAPES:
        data = _draw(rng, shape)
        spec = jax.ShapeDtypeStruct(shape, jnp.float32)
        got = run_aliased(kernel, jnp.asarray(data), out_shape=spec, input_output_aliases={0: 0})
        try:
            assert_array(got, expect(data), name=f"`{name}` run with `x_ref` and `o_ref` as one buffer",
                         rtol=1e-5, atol=1e-5)
        except CheckFailed as exc:
            apart = run_aliased(kernel, jnp.asarray(data), out_shape=spec, input_output_aliases={})
            assert_array(apart, expect(data), name=f"`{name}` run with `x_ref` and `o_ref` as separate buffers",
                         rtol=1e-5, atol=1e-5)  # wrong even without aliasing: the values are the fault
            why = hazard_message(kernel, jnp.asarray(data), out_shape=spec, input_output_aliases={0: 0},
                                 path=path, namespaces=(vars(submission),)) or (
                "Read every part of `x_ref` you need before writing the part of `o_ref` that shares its memory.")
            fail(f"{str(exc).rstrip('.')}, though it is right with separate buffers. An interpreter running your "
                 f"`pallas_call` gives each ref its own copy, so it hides this. {why}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_swap_halves_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`swap_halves` returns x with its column halves swapped"""
    _check_wrapper(submission.swap_halves, "swap_halves", _swapped, rng)


@pytest.mark.judge
@pytest.mark.points(3)
def test_swap_halves_kernel_under_aliasing(submission: ModuleType, rng: np.random.Generator,
                                           submission_path: Path) -> None:
    """`swap_halves_kernel` is correct when `x_ref` and `o_ref` are one buffer"""
    _check_aliased(submission, "swap_halves_kernel", _swapped, rng, submission_path)


@pytest.mark.judge
@pytest.mark.points(1)
def test_residual_tanh_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`residual_tanh` returns tanh(x) + x"""
    _check_wrapper(submission.residual_tanh, "residual_tanh", _residual, rng)


@pytest.mark.judge
@pytest.mark.points(2)
def test_residual_tanh_kernel_under_aliasing(submission: ModuleType, rng: np.random.Generator,
                                             submission_path: Path) -> None:
    """`residual_tanh_kernel` is correct when `x_ref` and `o_ref` are one buffer"""
    _check_aliased(submission, "residual_tanh_kernel", _residual, rng, submission_path)


@pytest.mark.judge
def test_aliasing_declared(submission: ModuleType, submission_path: Path) -> None:
    """Both wrappers declare `input_output_aliases={0: 0}` on their `pallas_call`"""
    x = jnp.ones(SHAPES[0], jnp.float32)
    for name in WRAPPERS:
        calls = pallas_calls(getattr(submission, name), x, path=submission_path)
        check(len(calls) == 1, f"`{name}` makes {len(calls)} `pallas_call`s; it should make one.")
        aliases = calls[0].input_output_aliases
        check(aliases == {0: 0}, f"the `pallas_call` in `{name}` declares `input_output_aliases="
                                 f"{aliases or '{}'}`; declare `{{0: 0}}` so the output may reuse x's buffer.")


@pytest.mark.judge
def test_x_consumed(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Both wrappers consume `x`: its buffer is donated to the output"""
    for name in WRAPPERS:
        x = jnp.asarray(_draw(rng, SHAPES[0]))
        jax.block_until_ready(getattr(submission, name)(x))
        assert_consumed(x, "x", hint=f"`x` was not consumed by `{name}`: the call did not donate "
                                     "its buffer, so the alias could not reuse it. Jit the wrapper "
                                     "with `donate_argnums=(0,)` (and do not copy `x` first).")
        # `x` being gone is reported by the process that ran the call; the program a call compiles to must
        # also write an output into `x`'s own buffer, as its text shows, for that to be donation.
        calls = jit_calls(getattr(submission, name), jax.ShapeDtypeStruct(SHAPES[0], jnp.float32),
                          path=submission_path)
        check(any(c.sources[i].arg == 0 and c.sources[i].via is None for c in calls for i in c.reused),
              f"`x` was deleted by `{name}`, but no jitted call of yours writes its result into `x`'s buffer: "
              "deleting an array is not donating it. Jit the wrapper with `donate_argnums=(0,)` and pass `x` "
              "itself, so that the output reuses its buffer.")


@pytest.mark.judge
def test_jitted_once(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Both wrappers run through a `jax.jit` built once, not on every call"""
    for name in WRAPPERS:
        calls = [(jnp.asarray(_draw(rng, SHAPES[0])),) for _ in range(2)]  # made before counting
        watched = watched_calls(getattr(submission, name), calls, module=submission, path=submission_path)
        check(not all(w.traced for w in watched) or any(w.programs for w in watched),
              f"`{name}` does not run through `jax.jit`; jit it once, at import, with `donate_argnums=(0,)`.")
        # What each call built is reported where it ran; a call whose program text is new compiled, whatever
        # was reported, and the same shape twice needs no new program.
        check(not unreported_compiles(watched),
              f"a second call of `{name}` with the same shape runs a program the first did not (its text differs), "
              "yet the record of that call says nothing was compiled: a new program is always compiled. Build the "
              "jit once, at import, and call that same object.")
        key = f"float32[{','.join(map(str, SHAPES[0]))}]"  # as JAX writes the type
        builds = JitBuilds(tuple(w.built for w in watched), (key,) * len(watched))
        message = builds.message(name)
        check(message is None, message or "")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    for shape in SHAPES:
        for name in WRAPPERS:
            assert_lowers_for_tpu(getattr(submission, name), jax.ShapeDtypeStruct(shape, jnp.float32), name=name,
                                  path=submission_path)
