"""Grader for `update_with_donate`: values, dtype and shape, donation, aliasing, compiles, buffer lifetime."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from course.grading import (
    CompileRecorder,
    JitCall,
    assert_array,
    assert_is_array,
    count_jit_builds,
    describe_exception,
    fail,
    is_consumed,
    is_deleted_error,
    jit_calls,
    learner_location,
)

LARGE = 100_003
TOL = {"rtol": 1e-6, "atol": 1e-6}


def _inputs(rng: np.random.Generator, n: int) -> tuple[jax.Array, jax.Array, np.ndarray, np.ndarray]:
    """Random float32 `state` and `delta` of length n: two distinct jax.Arrays and their NumPy copies."""
    s = (rng.standard_normal(n) * 8).astype(np.float32)
    d = rng.standard_normal(n).astype(np.float32)
    # device_put of a NumPy array copies it, so each argument has its own buffer.
    return jax.device_put(s), jax.device_put(d), s, d


def _call(sub: types.ModuleType, path: Path, state: jax.Array, delta: jax.Array) -> Any:
    """Call the learner's function, explaining in plain words a use of a donated array."""
    try:
        return sub.update_with_donate(state, delta)
    except (RuntimeError, ValueError) as exc:
        if not is_deleted_error(exc):
            raise
        where = learner_location(exc.__traceback__, path)
        which = "`delta`" if is_consumed(delta) and not is_consumed(state) else "`state`"
        fail(f"your code used {which} after donating it{where}. Once an array is passed to a "
             "donating jitted call, its buffer belongs to the result and the old array is "
             f"deleted, so reading it or passing it again raises `{describe_exception(exc)}`. "
             "Use the value the call returns instead.")


@pytest.fixture(scope="module")
def odd(run_seed: int) -> int:
    """A random odd length between 3 and 999, the same for every check of a run: each shape compiles
    once per run instead of once per check."""
    return int(2 * np.random.default_rng(run_seed).integers(1, 500) + 1)


def _jit_calls(sub: types.ModuleType, path: Path, n: int) -> list[JitCall]:
    """The jitted calls `update_with_donate` makes for float32[n] inputs, wherever its jit is held."""
    spec = jax.ShapeDtypeStruct((n,), np.float32)
    try:
        return jit_calls(sub.update_with_donate, spec, spec, path=path)
    except Exception as exc:  # noqa: BLE001 - the learner's code may not trace; say so in their words
        fail(f"`update_with_donate` could not be traced with float32[{n}] inputs, so its jitted calls "
             f"cannot be inspected: it raised {describe_exception(exc)}{learner_location(exc.__traceback__, path)}. "
             "Keep everything inside the function traceable: no NumPy conversions or Python branches on values.")


def _donating(calls: list[JitCall]) -> list[JitCall]:
    """The calls that donate any input."""
    return [c for c in calls if any(c.donated)]


@pytest.mark.points(1)
def test_values(submission: types.ModuleType, submission_path: Path, rng: np.random.Generator, odd: int) -> None:
    """Returns state + delta for lengths 0, 1, odd, 32, 64 and large."""
    for n in (0, 1, odd, 32, 64, LARGE):
        state, delta, s, d = _inputs(rng, n)
        out = _call(submission, submission_path, state, delta)
        assert_array(out, s + d, name=f"the result for length {n}", **TOL)


@pytest.mark.points(1)
def test_dtype_and_shape(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Keeps the float32 dtype and the shape of state."""
    for n in (0, odd):
        state, delta, _, _ = _inputs(rng, n)
        out = assert_is_array(_call(submission, submission_path, state, delta), f"the result for length {n}")
        if out.dtype != np.float32:
            fail(f"for float32[{n}] inputs the result has dtype {out.dtype}; it must stay float32. "
                 "A result of another dtype also cannot reuse `state`'s buffer.")
        if tuple(out.shape) != (n,):
            fail(f"for float32[{n}] inputs the result has shape {tuple(out.shape)}; it must keep "
                 f"the shape ({n},) of `state`.")


@pytest.mark.points(1)
def test_state_consumed(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Consumes state and leaves delta alive."""
    state, delta, _, _ = _inputs(rng, odd)
    _call(submission, submission_path, state, delta)
    state_gone, delta_gone = is_consumed(state), is_consumed(delta)
    if delta_gone and not state_gone:
        fail("`delta` was consumed and `state` survived: you donated the second argument. "
             "Use donate_argnums=(0,) so that `state` is the buffer given to the result.")
    if delta_gone:
        fail("`delta` was consumed as well as `state`: the caller still needs `delta`, so donate "
             "only `state` (donate_argnums=(0,)).")
    if not state_gone:
        fail("`state` is still alive after the call: its buffer was not donated. Build the helper "
             "with jax.jit(..., donate_argnums=(0,)), pass `state` itself (not a copy), and keep "
             "the result float32 so it can take over `state`'s buffer.")


@pytest.mark.points(1)
def test_helper_aliases_state(submission: types.ModuleType, submission_path: Path, odd: int) -> None:
    """The compiled helper writes its result into state's buffer, with no unusable donation."""
    n = odd
    calls = _jit_calls(submission, submission_path, n)
    if not calls:
        fail("`update_with_donate` runs nothing through jax.jit: there is no compiled helper whose result "
             "could take over `state`'s buffer. Build one with jax.jit(..., donate_argnums=(0,)) and call it.")
    donating = _donating(calls)
    if not donating:
        fail(_no_alias_message(calls[0], n))
    for call in donating:
        if call.not_usable:
            fail(f"compiling `{call.name}` makes JAX warn \"{call.not_usable[0]}\": a donated buffer that no "
                 "output can reuse is wasted. Donate `state` only (donate_argnums=(0,)), not `delta` too.")
    if not any(call.alias_bytes > 0 for call in donating):
        fail(_no_alias_message(donating[0], n))


def _no_alias_message(call: JitCall, n: int) -> str:
    """Why the compiled helper reuses no buffer, from what it asked for and what it returns."""
    where = f" (line {call.line})" if call.line else ""
    head = f"`{call.name}`{where} compiles with alias_size_in_bytes = 0: its result does not reuse `state`'s buffer. "
    if not any(call.donated):
        return head + "It donates nothing; build it with jax.jit(..., donate_argnums=(0,))."
    outs = [f"{o.dtype}{list(o.shape)}" for o in jax.tree_util.tree_leaves(call.out_info)]
    return head + (f"It donates a float32[{n}] input but returns {', '.join(outs) or 'nothing'}; only an "
                   "output of the same dtype and shape can take a donated buffer, so XLA dropped the donation "
                   "without a warning. Keep the result float32.")


@pytest.mark.points(1)
def test_helper_built_once(submission: types.ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Compiles once per shape, not once per call."""
    names = {c.name for c in _jit_calls(submission, submission_path, 32)}
    if not names:
        fail("`update_with_donate` runs nothing through jax.jit, so there is no compiled helper to reuse. "
             "Build the donating jit once, at the top level of your file, and call it from the function.")
    jax.clear_caches()  # earlier checks may have compiled these shapes through shared caches
    total = 0
    for n in (32, 64):
        inputs = [_inputs(rng, n)[:2] for _ in range(3)]  # made before counting starts
        per_call = []
        for state, delta in inputs:
            with count_jit_builds(submission_path) as built, CompileRecorder(names) as rec:
                _call(submission, submission_path, state, delta)
            if built[0]:
                fail(f"each call of `update_with_donate` builds {built[0]} new jax.jit wrapper(s): a jit made "
                     "inside the function is a new object on every call, with its own caches to fill. "
                     "Build it once, at the top level of your file (or once in an object made at import), "
                     "and call that.")
            per_call.append(rec.count())
        if any(per_call[1:]):
            fail(f"three calls with float32[{n}] inputs compiled {per_call} times: a repeated call of the "
                 "same shape compiled again. Create the jitted helper once and reuse it.")
        total += per_call[0]
    if total > 2:
        fail(f"lengths 32 and 64 compiled {total} times in all; one compile per shape, twice in all, is expected.")


@pytest.mark.points(1)
def test_no_read_after_donate(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Does not read state after donating it."""
    n = odd
    state = _inputs(rng, n)[0]
    for _ in range(3):  # the way a training loop uses it: each result is the next state
        delta = _inputs(rng, n)[1]  # a fresh delta each step, so only `state` is in question
        out = _call(submission, submission_path, state, delta)
        if out is state or is_consumed(out):
            fail("`update_with_donate` returned `state` (or another array whose buffer was "
                 "donated). After the donating call that array is deleted: donation does not "
                 "update `state` in place, it hands its buffer to the result. Return the result.")
        state = out


@pytest.mark.points(1)
def test_no_copy_before_donate(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Donates state itself, not a copy of it."""
    n = odd
    state, delta, _, _ = _inputs(rng, n)
    _call(submission, submission_path, state, delta)
    if is_consumed(state):
        return
    copies = [(call, src) for call in _jit_calls(submission, submission_path, n) for src in call.donated_copies(0)]
    if copies:
        call, src = copies[0]
        where = f" at line {src.line}" if src.line else ""
        fail(f"`state` is still alive after the call: what `{call.name}` was given to donate is not `state` "
             f"but a new array made from it by `{src.via}`{where} (such as jnp.array(state), state.copy() or "
             "state + 0). The copy needs a fresh buffer, which is what donation should save; pass `state` itself.")
