"""Grader for `update_with_donate`: values, dtype and shape, donation, aliasing, compiles, buffer lifetime."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from course.grading import (
    CheckFailed,
    Copy,
    JitBuilds,
    JitCall,
    argument_copies,
    assert_array,
    assert_is_array,
    describe_exception,
    fail,
    is_consumed,
    is_deleted_error,
    jit_calls,
    learner_location,
    program_values,
)
from course.grading.observe.calls.warmup import WatchedCall, unreported_compiles, watched_calls

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


def _lengths(odd: int) -> tuple[int, ...]:
    """The lengths a behaviour check tries: two fixed ones, so no verdict hangs on the drawn length, and it."""
    return (64, 1, odd)


def _jit_calls(sub: types.ModuleType, path: Path, n: int) -> list[JitCall]:
    """The jitted calls `update_with_donate` makes for float32[n] inputs, wherever its jit is held."""
    spec = jax.ShapeDtypeStruct((n,), np.float32)
    try:
        return jit_calls(sub.update_with_donate, spec, spec, path=path)
    except CheckFailed:  # the judge refused what came back: said in its own words
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's code may not trace; say so in their words
        if "lowered and compiled for a particular signature" in str(exc):
            fail(f"`update_with_donate` calls an ahead-of-time compiled program (`jax.jit(...).lower(...).compile()`)"
                 f"{learner_location(exc.__traceback__, path)}: JAX shows no program for such a call, so the "
                 "grader cannot read which buffers it donates. Call the jitted function itself "
                 "(`jax.jit(f, donate_argnums=(0,))`, built once): it compiles once per shape by itself.")
        fail(f"`update_with_donate` could not be traced with float32[{n}] inputs, so its jitted calls "
             f"cannot be inspected: it raised {describe_exception(exc)}{learner_location(exc.__traceback__, path)}. "
             "Keep everything inside the function traceable: no NumPy conversions or Python branches on values.")


def _donating(calls: list[JitCall]) -> list[JitCall]:
    """The calls that donate any input."""
    return [c for c in calls if any(c.donated)]


@pytest.mark.judge
@pytest.mark.points(1)
def test_values(submission: types.ModuleType, submission_path: Path, rng: np.random.Generator, odd: int) -> None:
    """Returns state + delta for lengths 0, 1, odd, 32, 64 and large, computed by the jitted program that ran."""
    for n in (0, 1, odd, 32, 64, LARGE):
        state, delta, s, d = _inputs(rng, n)
        out = _call(submission, submission_path, state, delta)
        assert_array(out, s + d, name=f"the result for length {n}", **TOL)
        _check_program_values(submission, rng, n)


def _check_program_values(submission: types.ModuleType, rng: np.random.Generator, n: int) -> None:
    """The result of the call just made must be what its jitted program computes: the grader runs that program
    itself on fresh inputs, apart from the process running the learner's code. A call that ran no program at all,
    or an ahead-of-time compiled one (which keeps no program to run), is left to the donation checks."""
    state, delta, s, d = _inputs(rng, n)
    values = program_values(
        submission.update_with_donate, state, delta,
        made_outside=f"for length {n}, the result is not computed by the jitted program your call ran from `state` "
        "and `delta`: it is made outside that program (by NumPy, Python or an eager operation after it), while "
        "the program only stands beside it. The point of the donating helper is that its result takes over "
        "`state`'s buffer, so the sum itself must be the jitted program's output, returned as it is.")
    if values is not None:
        assert_array(values[0], s + d, name=f"what your jitted program computes for length {n}, run by the grader on "
                     "fresh inputs", **TOL)


@pytest.mark.judge
@pytest.mark.points(1)
def test_dtype_and_shape(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Keeps the float32 dtype and the shape of state."""
    for n in (0, *_lengths(odd)):
        state, delta, _, _ = _inputs(rng, n)
        out = assert_is_array(_call(submission, submission_path, state, delta), f"the result for length {n}")
        if out.dtype != np.float32:
            fail(f"for float32[{n}] inputs the result has dtype {out.dtype}; it must stay float32. "
                 "A result of another dtype also cannot reuse `state`'s buffer.")
        if tuple(out.shape) != (n,):
            fail(f"for float32[{n}] inputs the result has shape {tuple(out.shape)}; it must keep "
                 f"the shape ({n},) of `state`.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_state_consumed(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Consumes state and leaves delta alive, for every length (0 too)."""
    for n in (*_lengths(odd), 0):  # the empty case last: a survivor there after the others is a shortcut
        state, delta, _, _ = _inputs(rng, n)
        _call(submission, submission_path, state, delta)
        state_gone, delta_gone = is_consumed(state), is_consumed(delta)
        if n == 0 and not state_gone and not delta_gone:
            fail("for length 0, `state` is still alive after the call, though every longer `state` was consumed: "
                 "the empty case skips the donating helper. An empty `state` is given up like any other (a "
                 "donating jit deletes even an empty array), and a caller must be able to rely on that, whatever "
                 "the length. Call the helper for every length, with no shortcut for the empty one.")
        if delta_gone and not state_gone:
            fail(f"for length {n}, `delta` was consumed and `state` survived: you donated the second argument. "
                 "Use donate_argnums=(0,) so that `state` is the buffer given to the result.")
        if delta_gone:
            fail(f"for length {n}, `delta` was consumed as well as `state`: the caller still needs `delta`, so "
                 "donate only `state` (donate_argnums=(0,)).")
        if not state_gone:
            fail(f"for length {n}, `state` is still alive after the call: its buffer was not donated. Build the "
                 "helper with jax.jit(..., donate_argnums=(0,)), pass `state` itself (not a copy), and keep "
                 "the result float32 so it can take over `state`'s buffer, whatever the length.")
        _check_reused(submission, submission_path, n)


def _check_reused(submission: types.ModuleType, submission_path: Path, n: int) -> None:
    """`state` being gone is reported by the process that ran the call; a program compiled for the call must
    also write an output into `state`'s own buffer, as its text shows, for the consumption to be donation."""
    for call in _jit_calls(submission, submission_path, n):
        if any(call.sources[i].arg == 0 and call.sources[i].via is None for i in call.reused):
            return
    fail(f"for length {n}, `state` was deleted by the call, but no jitted call of yours writes its result into "
         "`state`'s buffer: deleting an array is not donating it. Build the helper with "
         "jax.jit(..., donate_argnums=(0,)) and pass `state` itself, so that XLA reuses its buffer.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_helper_aliases_state(submission: types.ModuleType, submission_path: Path, odd: int) -> None:
    """The compiled helper writes its result into state's buffer, with no unusable donation."""
    for n in _lengths(odd):
        _check_aliases(submission, submission_path, n)


def _check_aliases(submission: types.ModuleType, submission_path: Path, n: int) -> None:
    """For float32[n] inputs: some jitted call donates `state`, XLA really reuses it, and JAX does not warn."""
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
    where = f" (line {call.where})" if call.where else ""
    head = (f"for float32[{n}] inputs, `{call.name}`{where} compiles with alias_size_in_bytes = 0: its result "
            "does not reuse `state`'s buffer. ")
    if not any(call.donated):
        return head + "It donates nothing; build it with jax.jit(..., donate_argnums=(0,))."
    outs = [f"{o.dtype}{list(o.shape)}" for o in jax.tree_util.tree_leaves(call.out_info)]
    return head + (f"It donates a float32[{n}] input but returns {', '.join(outs) or 'nothing'}; only an "
                   "output of the same dtype and shape can take a donated buffer, so XLA dropped the donation "
                   "without a warning. Keep the result float32.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_helper_built_once(fresh_submission: types.ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Compiles once per shape, not once per call."""
    lengths = (32, 64)
    calls = [_inputs(rng, n)[:2] for n in lengths for _ in range(3)]  # made before counting starts
    # JAX's caches emptied first: earlier checks compiled these shapes, also through jits of JAX's own functions.
    watched = _watched(fresh_submission, submission_path, calls)
    if all(w.traced for w in watched) and not any(w.programs for w in watched):
        fail("`update_with_donate` runs nothing through jax.jit, so there is no compiled helper to reuse. "
             "Build the donating jit once, at the top level of your file, and call it from the function.")
    # The compiles are reported where the calls ran; a call whose program text is new needed one anyway.
    missing = unreported_compiles(watched)
    if missing:
        n = lengths[missing[0] // 3]
        fail(f"a call with float32[{n}] inputs runs a program that no earlier call ran (its text differs), yet "
             "the record of that call says nothing was compiled: a new program is always compiled. Create the "
             "jitted helper once and reuse it.")
    for k, n in enumerate(lengths):
        group = watched[3 * k:3 * k + 3]
        builds = JitBuilds(tuple(w.built for w in group), (f"float32[{n}] inputs",) * 3)
        if message := builds.message("update_with_donate"):
            fail(message)
        per_call = [len(w.compiled) for w in group]
        if any(per_call[1:]):
            fail(f"three calls with float32[{n}] inputs compiled {per_call} times: a repeated call of the "
                 "same shape compiled again. Create the jitted helper once and reuse it.")
    if later := sum(w.built for w in watched[3:4]):
        fail(f"the first call with float32[{lengths[1]}] inputs built {later} new jitted wrapper(s), after the calls "
             f"with float32[{lengths[0]}] inputs had run: your jit is kept per length (in an `lru_cache` or a dict "
             "keyed on the shape), so every new length builds another. One `jax.jit` compiles once per shape by "
             "itself and keeps each program, so build it once, at module scope, whatever the shape, and call it "
             "for every length.")
    programs = [name for w in watched for name in w.compiled]
    if len(programs) > 2:
        fail(f"lengths 32 and 64 compiled your jitted code {len(programs)} times in all ({', '.join(programs)}); "
             "one compile per shape, twice in all, is expected.")


def _watched(sub: types.ModuleType, path: Path, calls: list[tuple[jax.Array, jax.Array]]) -> list[WatchedCall]:
    """The calls made where the learner's code runs, with what each compiled and built and the programs it ran."""
    try:
        return watched_calls(sub.update_with_donate, calls, module=sub, path=path, fresh_caches=True)
    except CheckFailed:
        raise
    except (RuntimeError, ValueError) as exc:
        if not is_deleted_error(exc):
            raise
        fail(f"your code used an array after donating it{learner_location(exc.__traceback__, path)}: once an "
             "array is passed to a donating jitted call, its buffer belongs to the result and the old array is "
             "deleted. Use the value the call returns instead.")


@pytest.mark.points(1)
def test_no_read_after_donate(
    submission: types.ModuleType,
    submission_path: Path,
    rng: np.random.Generator,
    odd: int,
) -> None:
    """Does not read state after donating it."""
    for n in (64, odd):
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
    """Makes no copy of state: neither a copy donated in its place nor a backup."""
    for n in _lengths(odd):
        _check_no_copy(submission, submission_path, rng, n)


def _check_no_copy(submission: types.ModuleType, submission_path: Path, rng: np.random.Generator, n: int) -> None:
    """For float32[n] inputs: `state` itself is donated, and no copy of it is made or kept."""
    state, delta, _, _ = _inputs(rng, n)
    _call(submission, submission_path, state, delta)
    if not is_consumed(state):
        donated = [(c, src) for c in _jit_calls(submission, submission_path, n) for src in c.donated_copies(0)]
        if donated:
            call, src = donated[0]
            where = f"line {src.line}" if src.line else "your function"
            fail(f"`state` is still alive after the call: {where} makes a new array from it with `{src.via}` "
                 "(as `jnp.array(state)`, `state.copy()`, `jax.device_put(state, may_alias=False)` and `state + 0` "
                 f"do) and `{call.name}` donates that copy. "
                 "The copy needs a fresh buffer, which is what donation should save; pass `state` itself.")
    spec = jax.ShapeDtypeStruct((n,), np.float32)
    try:
        copies = argument_copies(submission.update_with_donate, spec, spec, path=submission_path)
    except Exception:  # noqa: BLE001 - an untraceable function is named by test_helper_aliases_state
        return
    kept = [c for c in copies if c.arg == 0]
    if kept:
        fail(_copy_message(kept[0], n))


def _copy_message(copy: Copy, n: int) -> str:
    """A copy of `state` kept beside the donation, named as such, with why it defeats the donation."""
    where = f"line {copy.line}" if copy.line else "your function"
    returned = copy.via.removeprefix("returned by ")
    how = (f"calls {returned}, which returns `state` unchanged beside the result, so XLA copies it into an "
           "output of its own" if returned != copy.via else f"copies `state` (`{copy.via}`) before donating it")
    return (f"{where} {how}: a second float32[{n}] buffer holding the old values, the very memory donation "
            "exists to save, even when the copy is only kept aside as a backup. `update_with_donate` copies "
            "nothing; a caller that needs the old values afterwards should not donate them.")
