"""Grader for `slice_ref`: views that compose, against NumPy views; bounds, `...`, jit, one load or store.

The checks of values run in the judge: the learner's refs and views stay in the executor, which
answers each slice, read and write, and only arrays and plain values come back to be compared.
"""

from __future__ import annotations

import math
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
from course.grading.judge.named import ViewCase, numpy_view, selector_code, view_cases
from course.grading.judge.properties import assert_gave, check_property
from course.grading.judge.source import describe_exception, learner_location
from course.grading.observe.calls.there import in_executor
from course.grading.observe.kernels.refs import (
    describe_accesses,
    explained_ref_errors,
    moves_selection,
    ref_error_hint,
    ref_trace,
    refs_in,
)

AXES = ("layer", "head", "dim")
SHAPE = (6, 4, 5)
# A 3-level chain with a step, a window, an int and a negative: its view has shape (3, 2).
CHAIN = ({"layer": slice(1, None, 2)}, {"head": slice(1, 3)}, {"dim": -1})


def _chain(submission: ModuleType, case: ViewCase) -> tuple[Any, Any, np.ndarray]:
    """The learner's ref over `arange` data, their view at the end of the case's chain, and the data."""
    data = np.arange(math.prod(case.shape), dtype=np.float32).reshape(case.shape)
    r = submission.new_ref(jnp.asarray(data), case.axes)
    return r, _follow(r, case.chain), data


def _read(submission: ModuleType, case: ViewCase) -> None:
    """Read through the case's chain and compare with the NumPy view."""
    _, view, data = _chain(submission, case)
    target, index = case.target(data)
    assert_gave(view.value() if case.final is None else view[case.final], target[index])


def _write_value(case: ViewCase, shape: tuple[int, ...]) -> tuple[Any, str]:
    """The value a write case stores (distinct negatives, or the Python int -7) and its code."""
    if case.scalar:
        return -7, "-7"
    size = math.prod(shape)
    dims = "()" if not shape else ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    return -1 - np.arange(size, dtype=np.float32).reshape(shape), f"-1 - jnp.arange({size}.).reshape({dims})"


def _write(submission: ModuleType, case: ViewCase) -> None:
    """Write through the case's chain and compare the whole buffer with NumPy's."""
    r, view, data = _chain(submission, case)
    target, index = case.target(data)
    value, _ = _write_value(case, np.shape(target[index]))
    view[case.final] = value if case.scalar else jnp.asarray(value)
    target[index] = value
    assert_gave(submission.freeze(r), data)


def _opening(case: ViewCase) -> str:
    """The code that makes the case's ref."""
    dims = ", ".join(map(str, case.shape))
    return f"r = new_ref(jnp.arange({math.prod(case.shape)}.).reshape({dims}), {case.axes!r}); "


def _reproduce_read(case: ViewCase) -> str:
    """The read case as one line of code."""
    tail = ".value()" if case.final is None else f"[{selector_code(case.final)}]"
    return _opening(case) + _show(case.chain) + tail


def _reproduce_write(case: ViewCase) -> str:
    """The write case as one line of code."""
    target, index = case.target(np.zeros(case.shape, np.float32))
    _, code = _write_value(case, np.shape(target[index]))
    return f"{_opening(case)}{_show(case.chain, case.final)} = {code}; freeze(r)"


def _explain(exc: BaseException) -> str | None:
    """What a failing case's exception means, when it is one the lesson speaks of."""
    if isinstance(exc, IndexError | KeyError):
        return "every selector in these cases is valid for the view it is applied to"
    return ref_error_hint(exc)


def _draw(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    """Random float32 values from this check's generator."""
    return rng.standard_normal(shape).astype(np.float32)


def _fresh(submission: ModuleType, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """A NamedRef over random data of SHAPE with AXES, and that data."""
    data = _draw(rng)
    return submission.new_ref(jnp.asarray(data), AXES), data


def _follow(r: Any, chain: tuple[Any, ...]) -> Any:
    """`r.slice(a).slice(b)...` for the selectors of `chain`."""
    for sel in chain:
        r = r.slice(sel)
    return r


def _show(chain: tuple[Any, ...], final: Any = None) -> str:
    """`r.slice(...).slice(...)[...]` as code, for a message."""
    tail = "" if final is None else f"[{selector_code(final)}]"
    return "r" + "".join(f".slice({selector_code(s)})" for s in chain) + tail


def _check_read(r: Any, data: np.ndarray, chain: tuple[Any, ...], final: Any, path: Path, note: str = "") -> None:
    """Read `final` through `chain` and compare with the NumPy view of `data`."""
    what = _show(chain, final)
    with explained_ref_errors(f"`{what}`", path):
        got = _follow(r, chain)[final]
    want, _ = numpy_view(data, AXES, chain + (final,))
    try:
        assert_array(got, np.asarray(want), name=f"`{what}`")
    except CheckFailed as exc:
        fail(f"{exc}.{note}")


@pytest.mark.judge
def test_view_properties(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A view reports the axes, shape, named shape and dtype of what it selects"""
    r, data = _fresh(submission, rng)
    for chain in (({"head": 2}, {"dim": slice(1, None, 2)}), ((..., 0),), ({"layer": slice(1, 9)}, 1)):
        with explained_ref_errors(f"`{_show(chain)}`", submission_path):
            view = _follow(r, chain)
        values, axes = numpy_view(data, AXES, chain)
        want = {"axes": axes, "shape": values.shape, "named_shape": dict(zip(axes, values.shape, strict=True)),
                "dtype": np.dtype(np.float32)}
        for prop, expected in want.items():
            got = getattr(view, prop)
            same = np.dtype(got) == expected if prop == "dtype" else (
                type(got) is type(expected) and got == expected)
            check(same, f"`{_show(chain)}.{prop}` is {got!r}, expected {expected!r}.")


# Cases every run tries first, one per usual mistake, so catching it never depends on the seed: a
# negative int, steps composed, a stop past the view, `...` between two indices, negative slice
# bounds, a step that does not divide the span, and a kept axis of length 1, each on a view that is
# not the whole axis.
READ_EXAMPLES = (
    ViewCase((5, 3), ("a", "b"), ({"a": slice(1, 4)},), {"a": -1}),
    ViewCase((9,), ("x",), ({"x": slice(1, None, 2)},), slice(1, None, 2)),
    ViewCase((6, 2), ("a", "b"), ({"a": slice(1, 4)},), {"a": slice(1, 9)}),
    ViewCase((2, 3, 4), ("a", "b", "c"), ((..., slice(1, 3)),), (1, ..., 0)),
    ViewCase((6, 2), ("a", "b"), ({"a": slice(1, 5)},), {"a": slice(-3, -1)}),
    ViewCase((8, 3), ("x", "y"), ({"x": slice(0, 8, 3)}, {"y": slice(1, 2)}), {"x": slice(None, None, 2)}),
    ViewCase((4, 3, 2), ("a", "b", "c"), ({"b": slice(2, 3)}, 1), (slice(None), 0)),
)
WRITE_EXAMPLES = tuple(ViewCase(c.shape, c.axes, c.chain, c.final, scalar=False) for c in READ_EXAMPLES)


@pytest.mark.judge
@pytest.mark.points(3)
def test_property_reads(submission: ModuleType, seed: int, submission_path: Path) -> None:
    """Reads through chains of 0 to 3 views of 1- to 4-axis refs equal NumPy's views (property-based)"""
    check_property(lambda case: _read(submission, case), view_cases(writes=False), seed=seed,
                   examples=READ_EXAMPLES, reproduce=_reproduce_read, path=submission_path, explain=_explain,
                   max_examples=30,
                   rule="A read through a chain of views must equal the same chain of NumPy views.")


@pytest.mark.judge
@pytest.mark.points(3)
def test_property_writes(submission: ModuleType, seed: int, submission_path: Path) -> None:
    """Writes through chains of 0 to 3 views change exactly what NumPy's views would (property-based)"""
    check_property(lambda case: _write(submission, case), view_cases(writes=True), seed=seed,
                   examples=WRITE_EXAMPLES, reproduce=_reproduce_write, path=submission_path, explain=_explain,
                   max_examples=20,
                   rule="A write through a chain of views must change exactly what the same NumPy views "
                        "would change, and nothing else.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_lesson_examples(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """The lesson's examples: a window write, `slice(1, 4)` then `0`, and stepped views"""
    r, data = _fresh(submission, rng)
    window = {"layer": slice(2, 5)}
    value = _draw(rng, (SHAPE[2],))
    with explained_ref_errors("`window[{'layer': 0, 'head': 3}] = value`", submission_path):
        _follow(r, (window,))[{"layer": 0, "head": 3}] = jnp.asarray(value)
    data[2, 3] = value
    assert_array(submission.freeze(r), data, name="the buffer after `r.slice({'layer': slice(2, 5)})"
                                                  "[{'layer': 0, 'head': 3}] = value` (layer 2 expected)")
    for chain, final in ((({"layer": slice(1, 4)}, {"layer": 0}), ...),
                         (({"dim": slice(None, None, 2)}, {"dim": slice(1, None)}), ...),
                         (({"layer": slice(1, None, 2)}, {"layer": slice(None, None, 2)}), {"layer": -1}),
                         (({"layer": slice(None, None, 2)},), {"layer": 1, "head": -1})):
        _check_read(r, data, chain, final, submission_path,
                    " Position i of a view kept as `range(start, stop, step)` is base position "
                    "`start + i * step`, and a negative i counts from the view's end: `range(...)[sel]` "
                    "maps a selector through the view exactly.")
    view = _follow(r, ({"layer": slice(1, 4)}, {"layer": 0}))
    with explained_ref_errors("`view.value()`", submission_path):
        got = view.value()
    assert_array(got, data[1], name="`r.slice({'layer': slice(1, 4)}).slice({'layer': 0}).value()`")


@pytest.mark.judge
def test_bounds_clamped(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Slice bounds past the view are clamped to the view, as NumPy does, to nothing at an axis's end too"""
    r, data = _fresh(submission, rng)
    note = (" A slice's bounds are clamped to the view's own length (`range(n)[s]` does it), not to the "
            "base's, and never read past the view.")
    for chain, final in ((({"layer": slice(1, 4)},), {"layer": slice(1, 100)}),
                         (({"layer": slice(1, 4)},), {"layer": slice(-100, 2)}),
                         (({"dim": slice(1, None, 2)},), {"dim": slice(0, 10)}),
                         (({"head": slice(1, 3)}, {"head": slice(1, 50)}), ...)):
        _check_read(r, data, chain, final, submission_path, note)
    with explained_ref_errors("a write through a clamped window", submission_path):
        _follow(r, ({"layer": slice(3, 5)},))[{"layer": slice(0, 99)}] = 0.0
    data[3:5] = 0.0
    assert_array(submission.freeze(r), data,
                 name="the buffer after `r.slice({'layer': slice(3, 5)})[{'layer': slice(0, 99)}] = 0.0`")
    _check_empty_at_the_end(submission, data, submission_path)


# Selections clamped to nothing at the very end of an axis: directly, through a chain, and on a stepped view.
EMPTY_AT_END = ((({"layer": slice(6, 9)},), ...), (({"layer": slice(4, None)}, {"layer": slice(2, None)}), ...),
                (({"dim": slice(1, None, 2)},), {"dim": slice(2, None)}))


def _check_empty_at_the_end(submission: ModuleType, data: np.ndarray, path: Path) -> None:
    """On a new ref over `data`: an empty selection that starts at the end of an axis reads an empty array and
    writes nothing, as in NumPy."""
    r = submission.new_ref(jnp.asarray(data), AXES)
    note = (" A selection clamped to nothing is a view of no elements wherever it starts, the end of an axis too: "
            "NumPy gives an empty array there, and so must the view.")
    for chain, final in EMPTY_AT_END:
        _check_read(r, data, chain, final, path, note)
    what = "`r.slice({'layer': slice(4, None)})[{'layer': slice(2, 5)}] = 0.0`"
    with explained_ref_errors(what, path):
        _follow(r, ({"layer": slice(4, None)},))[{"layer": slice(2, 5)}] = 0.0
    assert_array(submission.freeze(r), data, name=f"the buffer after {what}, which selects no layer")


@pytest.mark.judge
def test_ellipsis(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`...` stands for the axes named on neither side of it; trailing axes are taken whole"""
    r, data = _fresh(submission, rng)
    note = " `...` stands for as many whole axes as the index leaves unnamed, wherever it stands."
    for chain, final in (((), (..., -1)), ((), (1, ..., 2)), (({"head": slice(1, 3)},), (..., 0)),
                         (((..., slice(1, 4)),), (0, ...)), (({"layer": 2},), (..., slice(None, None, 2))),
                         ((), (slice(1, 3),)), (((0, ...), 1), ...)):
        _check_read(r, data, chain, final, submission_path, note)


def _must_raise(action: Callable[[], Any], what: str, kinds: tuple[type, ...], advice: str,
                path: Path) -> BaseException:
    """Run `action`; fail unless it raises one of `kinds`."""
    try:
        action()
    except kinds as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - any other exception is the wrong one
        where = learner_location(exc.__traceback__, path)
        fail(f"`{what}` raised {describe_exception(exc)}{where}, not {' or '.join(k.__name__ for k in kinds)}. "
             f"{advice}")
    fail(f"`{what}` did not raise {' or '.join(k.__name__ for k in kinds)}. {advice}")


@pytest.mark.judge
@pytest.mark.points(2)
def test_out_of_range_ints(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """An int outside the view raises IndexError, eagerly and under `jax.jit`"""
    r, data = _fresh(submission, rng)
    window = ({"layer": slice(1, 4)},)
    advice = ("Check each int against the view's own length (3 here, although the base has 6), "
              "counting negatives from the view's end.")
    for final in ({"layer": 3}, {"layer": -4}, 3, (0, 4)):
        _must_raise(lambda f=final: _follow(r, window)[f], _show(window, final), (IndexError,), advice,
                    submission_path)
    _must_raise(lambda: _follow(r, window).slice({"layer": 5}), _show(window + ({"layer": 5},)), (IndexError,),
                advice, submission_path)

    def write() -> None:
        _follow(r, window)[{"layer": 3}] = 1.0

    _must_raise(write, _show(window, {"layer": 3}) + " = 1.0", (IndexError,), advice, submission_path)
    assert_array(submission.freeze(r), data, name="the buffer after the refused out-of-range write")
    jitted = advice + (" Under `jax.jit`, JAX clamps an out-of-range ref int silently, so only the view's "
                       "own check can catch it.")
    for chain, final in ((window, {"layer": 3}), ((), {"layer": 6})):
        _must_raise(lambda c=chain, f=final: _read_under_jit(submission, data, c, f),
                    f"jax.jit(lambda r: {_show(chain, final)})(r)", (IndexError,), jitted, submission_path)


@in_executor
def _read_under_jit(submission: ModuleType, data: np.ndarray, chain: tuple[Any, ...], final: Any) -> Any:
    """`jax.jit(lambda r: r.slice(...)...[final])(r)` for a ref over `data`, made where the learner's code runs (a
    jit cannot span two processes): what it raised is raised in the judge's check as it was raised there."""
    return jax.jit(lambda ref: _follow(ref, tuple(chain))[final])(submission.new_ref(jnp.asarray(data), AXES))


@pytest.mark.judge
def test_removed_axis(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """An axis an int removed cannot be named again"""
    r, data = _fresh(submission, rng)
    advice = ("After `{'layer': 2}` the view has no axis 'layer' any more; refuse the name with a KeyError "
              "or ValueError that says so.")
    view = ({"layer": 2},)
    # An int and a slice alike: a view that refuses only ints still lets `slice(None)` name the axis.
    for entry in (0, slice(None), slice(1, 3)):
        sel = {"layer": entry}

        def write(s: dict[str, Any] = sel) -> None:
            _follow(r, view)[s] = 1.0

        for action, what in ((lambda s=sel: _follow(r, view)[s], _show(view, sel)),
                             (lambda s=sel: _follow(r, view).slice(s), _show(view + (sel,))),
                             (write, _show(view, sel) + " = 1.0")):
            exc = _must_raise(action, what, (KeyError, ValueError), advice, submission_path)
            check("layer" in str(exc), f"`{what}` raised {type(exc).__name__} without naming 'layer' "
                                       f"(it says: {str(exc)[:160]!r}).")
    assert_array(submission.freeze(r), data, name="the buffer after the refused writes")


@pytest.mark.judge
def test_unsliced(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`unsliced()` is the base NamedRef itself, and every view writes into it"""
    r, data = _fresh(submission, rng)
    for chain in (({"head": 1},), ({"layer": slice(1, 5)}, {"dim": slice(None, None, 2)}, {"layer": -1})):
        with explained_ref_errors(f"`{_show(chain)}.unsliced()`", submission_path):
            view = _follow(r, chain)
            base = view.unsliced()
        check(base is r, f"`{_show(chain)}.unsliced()` returns another {type(base).__name__} object, not the "
                         "NamedRef the chain started from; keep the base itself, not a copy or the parent view.")
    value = _draw(rng, (4, 3))
    with explained_ref_errors("the write", submission_path):
        view[{"dim": slice(0, 3)}] = jnp.asarray(value)
    data[1:5][-1, :, ::2][:, 0:3] = value
    assert_array(submission.freeze(r), data, name=f"the base after `{_show(chain, {'dim': slice(0, 3)})} = value`")


@pytest.mark.judge
@pytest.mark.points(2)
def test_chains_under_jit(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Chains of views read and write inside `jax.jit`"""
    data, row = _draw(rng), _draw(rng, (3,))
    with explained_ref_errors("inside `jax.jit`, the program", submission_path):
        read, tail, frozen = _chains_program(submission, data, row)
    want_read = data[1::2][:, 1][-1, 0:5:2].copy()
    data[1::2][:, 1][0, 1:4] = row
    data[..., ::2][2, ..., 1] = 0.5
    assert_array(read, want_read, name="`odd[{'dim': slice(0, 5, 2), 'layer': -1}]` inside `jax.jit`")
    assert_array(tail, data[..., ::2][:, -1], name="`every_other.slice({'head': -1}).value()` inside `jax.jit`")
    assert_array(frozen, data, name="the buffer after two writes through views inside `jax.jit`")


@in_executor
def _chains_program(submission: ModuleType, data: np.ndarray, row: np.ndarray) -> tuple[Any, Any, Any]:
    """Reads and writes through chains of views inside the grader's `jax.jit`, then the buffer, made where the
    learner's code runs; the judge compares all three."""
    r = submission.new_ref(jnp.asarray(data), AXES)

    @jax.jit
    def program(ref: Any, v: jax.Array) -> tuple[jax.Array, jax.Array]:
        odd = ref.slice({"layer": slice(1, None, 2)}).slice({"head": 1})
        read = odd[{"dim": slice(0, 5, 2), "layer": -1}]
        odd.slice({"dim": slice(1, 4)})[{"layer": 0}] = v
        every_other = ref.slice((..., slice(None, None, 2)))
        every_other[2, ..., 1] = 0.5
        return read, every_other.slice({"head": -1}).value()

    read, tail = program(r, jnp.asarray(row))
    return read, tail, submission.freeze(r)


# How a check reaches the chain's view through the learner's refs: read whole, read by `value()`, read as a
# selection of its parent view, and written whole (the value traced too).
_ACCESSES: dict[str, Callable[..., Any]] = {
    "whole": lambda ref: _follow(ref, CHAIN)[...],
    "value": lambda ref: _follow(ref, CHAIN).value(),
    "parent": lambda ref: _follow(ref, CHAIN[:2])[CHAIN[2]],
    "write": lambda ref, v: _follow(ref, CHAIN).__setitem__(..., v),
}


@in_executor
def _trace(submission: ModuleType, what: str, access: str, data: np.ndarray, *args: Any) -> Any:
    """The trace of one of `_ACCESSES` on a NamedRef over `data` (and `args`), with its arguments' names and which
    are refs, made where the learner's code runs, JAX's ref errors explained: the judge reads it (`refs_in`)."""
    r = submission.new_ref(jnp.asarray(data), AXES)
    with explained_ref_errors(what, Path(submission.__file__)):
        return ref_trace(_ACCESSES[access], r, *args)


@pytest.mark.judge
@pytest.mark.points(2)
def test_chain_one_load(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A read through a 3-level chain is one load of exactly the view's elements"""
    data = _draw(rng)
    reads = ((_show(CHAIN, ...), "whole"), (_show(CHAIN) + ".value()", "value"),
             (_show(CHAIN[:2], CHAIN[2]), "parent"))
    for what, read in reads:
        trace = refs_in(*_trace(submission, f"`{what}`", read, data), path=submission_path)
        seen = describe_accesses(trace.accesses)
        check(not trace.stores(), f"reading `{what}` also writes ({seen}); a read only loads.")
        loads = trace.loads()
        check(len(loads) == 1 and moves_selection(loads[0], (3, 2)),
              f"reading `{what}` makes {seen}; expected one load of the view's 6 elements, shape (3, 2). "
              f"{_load_advice(loads)}")


def _load_advice(loads: list[Any]) -> str:
    """What to change, from the shapes a read loaded."""
    whole = [a for a in loads if a.value_shape is not None and tuple(a.value_shape) == SHAPE]
    if whole:
        return ("It loads the whole base and indexes the value: compose the view into one index of the base "
                "and load with it (`value()` too is a read of the view, the same as `[...]`).")
    return ("Compose every selector of the chain, steps and ints included, into one index of the base, so "
            "the load brings in exactly the view's elements, instead of reading a larger part and slicing "
            "the value.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_chain_one_store(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A write through a 3-level chain is one store of exactly the view's elements, and no load"""
    what = _show(CHAIN, ...) + " = value"
    trace = refs_in(*_trace(submission, f"`{what}`", "write", _draw(rng), jnp.ones((3, 2))), path=submission_path)
    seen = describe_accesses(trace.accesses)
    check(not trace.loads(), f"writing `{what}` loads ({seen}); a write through a view needs no read. "
                             "Compose the selectors into one index of the base and store once.")
    stores = trace.stores()
    check(len(stores) == 1 and moves_selection(stores[0], (3, 2)),
          f"writing `{what}` makes {seen}; expected one store of shape (3, 2), just the view.")
