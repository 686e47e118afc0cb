"""Grader for `named_ref`: names over one `jax.Ref`, reads and writes by name, a pytree, one load or store.

Creation, reads, writes, refusals and `freeze` are judged in the judge, through the learner's NamedRef
held by the executor. The checks of writes read the buffer from the `jax.Ref` leaf itself
(`ref_leaves`), so they never depend on the learner's read. The checks under `jax.jit`, of the
pytree and of loads and stores trace the learner's code, and run beside it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import CheckFailed, check, fail
from course.grading.judge.arrays import assert_array
from course.grading.judge.named import numpy_index, selector_code
from course.grading.judge.source import describe_exception, learner_location
from course.grading.observe.calls.there import in_executor
from course.grading.observe.kernels.kernels import primitive_counts
from course.grading.observe.kernels.refs import (
    describe_accesses,
    explained_ref_errors,
    moves_selection,
    ref_leaves,
    ref_trace,
    refs_in,
)

AXES = ("layer", "head", "dim")
SHAPE = (4, 3, 5)
# Dict order differs from axis order; negative ints, starts and stops, steps, `...` and `{}` are all here.
SELECTORS: list[Any] = [
    {"dim": 2, "layer": 1},
    {"head": slice(0, 2), "layer": -1},
    {"dim": slice(None, None, 2)},
    {"dim": slice(-3, None), "layer": slice(1, 4, 2)},
    {"dim": -1, "head": -2, "layer": 0},
    {"dim": slice(1, -1)},
    {"head": slice(-3, -1), "dim": slice(None, -1, 3)},
    ...,
    {},
]
# Selectors for the load and store counts: a name out of order, a negative int, a window.
COUNTED = {"dim": slice(1, 4), "layer": -1}


def _draw(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    """Random float32 values from this check's generator."""
    return rng.standard_normal(shape).astype(np.float32)


def _show(sel: Any) -> str:
    """A selector as the learner writes it: `r[{'dim': 2}]` or `r[...]`."""
    return f"r[{selector_code(sel)}]"


def _contents(submission: ModuleType, r: Any) -> Any:
    """The buffer's contents: read from the `jax.Ref` leaf itself when there is one, else by `freeze`."""
    leaves = ref_leaves(r)
    if len(leaves) == 1 and leaves[0][0]:
        return leaves[0][1]  # so a check of writes never depends on the learner's read or freeze
    return submission.freeze(r)


def _learner_error(exc: BaseException, path: Path) -> str:
    """'ValueError: ... at named_ref.py line 12: `code`' for an exception from the learner's code."""
    return f"{describe_exception(exc)}{learner_location(exc.__traceback__, path)}"


def _dict_order_note(sel: Any, got: Any, data: np.ndarray) -> str:
    """A hint when the value read is what the dict's own order would select."""
    if not isinstance(sel, dict) or list(sel) == [a for a in AXES if a in sel]:
        return ""
    as_listed = tuple(sel.values()) + (slice(None),) * (len(AXES) - len(sel))
    try:
        same = np.array_equal(np.asarray(got), data[as_listed])
    except (IndexError, TypeError, ValueError):
        return ""
    if not same:
        return ""
    return (" That is what the dict's own order selects: a dict lists names in the caller's order, "
            "so place each entry by its name's position in `axes`.")


@in_executor
def _access_trace(submission: ModuleType, what: str, data: np.ndarray, sel: Any, value: Any = None,
                  write: bool = False) -> Any:
    """The trace of reading `sel` (or, with `write`, of storing `value` there) of a NamedRef over `data`, with its
    arguments' names and which of them are refs, made where the learner's code runs: the judge reads the loads and
    stores from it (`refs_in`). Fails in plain words when the NamedRef cannot be traced."""
    path = Path(submission.__file__)
    r = submission.new_ref(jnp.asarray(data), AXES)
    leaves, treedef = jax.tree_util.tree_flatten(r)
    try:
        again = jax.tree_util.tree_leaves(jax.tree_util.tree_unflatten(treedef, leaves))
        same = len(again) == len(leaves) and all(a is b for a, b in zip(again, leaves, strict=True))
    except Exception:  # noqa: BLE001 - the pytree check explains what went wrong
        same = False
    check(len(leaves) == 1 and isinstance(leaves[0], jax.Ref) and same,
          f"{what} could not be traced: JAX passes a NamedRef to a traced function only as a pytree "
          "whose single leaf is its `jax.Ref` (see the pytree check).")
    # The value is closed over, not traced: 1.5 stays the Python float a learner would write.
    fn = (lambda ref: ref.__setitem__(sel, value)) if write else (lambda ref: ref[sel])
    with explained_ref_errors(what, path):
        return ref_trace(fn, r)


@pytest.mark.judge
def test_creation(submission: ModuleType, rng: np.random.Generator) -> None:
    """`new_ref` gives a NamedRef with the axes, shape, named shape and dtype of its value"""
    cases = [(jnp.asarray(_draw(rng)), list(AXES)),
             (jnp.asarray(rng.integers(-9, 9, (2, 6)).astype(np.int32)), ("row", "col"))]
    for value, axes in cases:
        r = submission.new_ref(value, axes)
        what = f"new_ref(<{value.dtype} array of shape {value.shape}>, {axes!r})"
        want = {"axes": tuple(axes), "shape": tuple(value.shape),
                "named_shape": dict(zip(axes, value.shape, strict=True)), "dtype": value.dtype}
        for prop, expected in want.items():
            got = getattr(r, prop)
            kind = type(expected)
            if prop == "dtype":
                ok = np.dtype(got) == expected
            else:
                ok = isinstance(got, kind) and got == expected and (
                    prop != "named_shape" or list(got) == list(expected))
            check(ok, f"`{what}.{prop}` is {got!r}, expected {expected!r}"
                      f"{'' if prop == 'dtype' else f' (a {kind.__name__})'}.")


@pytest.mark.judge
def test_bad_axes_rejected(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`new_ref` refuses too few, too many or repeated axis names with a ValueError"""
    value = jnp.asarray(_draw(rng))
    for axes, why in ((("layer", "head"), "2 names for 3 dimensions"),
                      (AXES + ("extra",), "4 names for 3 dimensions"),
                      (("layer", "head", "layer"), "a repeated name")):
        try:
            submission.new_ref(value, axes)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001 - any other exception is the wrong one
            fail(f"`new_ref(x, {axes!r})` ({why}) raised {_learner_error(exc, submission_path)}; "
                 "raise a ValueError.")
        fail(f"`new_ref(x, {axes!r})` ({why}) was accepted; check the names against `value.ndim` "
             "and for repeats, and raise a ValueError.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_reads(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A read selects by name, whatever the order of the dict, with negatives, steps, `...` and `{}`"""
    data = _draw(rng)
    r = submission.new_ref(jnp.asarray(data), AXES)
    for sel in SELECTORS:
        with explained_ref_errors(f"`{_show(sel)}`", submission_path):
            got = r[sel]
        try:
            assert_array(got, data[numpy_index(sel, AXES)], name=f"`{_show(sel)}`")
        except CheckFailed as exc:
            fail(f"{exc}.{_dict_order_note(sel, got, data)}")


@pytest.mark.judge
@pytest.mark.points(2)
def test_writes(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A write changes exactly the selected elements"""
    data = _draw(rng)
    r = submission.new_ref(jnp.asarray(data), AXES)
    for sel in SELECTORS:
        value = _draw(rng, data[numpy_index(sel, AXES)].shape)
        data[numpy_index(sel, AXES)] = value
        with explained_ref_errors(f"`{_show(sel)} = value` with a value of the selection's shape {value.shape}",
                                  submission_path):
            r[sel] = jnp.asarray(value)
        assert_array(_contents(submission, r), data,
                     name=f"the buffer after `{_show(sel)} = value` (value of shape {value.shape})")


@pytest.mark.judge
def test_scalar_fill_and_cast(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A write casts its value to the ref's dtype, and a scalar (a Python number or a 0-d array) fills the selection"""
    data = _draw(rng)
    r = submission.new_ref(jnp.asarray(data), AXES)
    ints = rng.integers(-9, 9, (3, 2)).astype(np.int32)
    halves = jnp.asarray(rng.integers(-9, 9, (4, 3)) / 2, jnp.bfloat16)
    writes = [({"head": 1}, 2, "the Python int 2"),
              ({"dim": -1}, 0.5, "the Python float 0.5"),
              ({"layer": 0, "dim": slice(0, 4, 2)}, ints, "an int32 array of shape (3, 2)"),
              ({"dim": 0}, halves, "a bfloat16 array of shape (4, 3)"),
              ({"layer": 1, "head": 0}, jnp.float32(3), "the 0-d array `jnp.float32(3)`"),
              ({"layer": -2}, jnp.int32(-4), "the 0-d int32 array `jnp.int32(-4)`")]
    for sel, value, what in writes:
        data[numpy_index(sel, AXES)] = np.asarray(value, np.float32)
        with explained_ref_errors(f"writing {what} with `{_show(sel)} = ...` into a float32 ref",
                                  submission_path):
            r[sel] = value
        assert_array(_contents(submission, r), data, name=f"the buffer after writing {what} into `{_show(sel)}`")
    _traced_scalar_fill(submission, rng, submission_path)


def _traced_scalar_fill(submission: ModuleType, rng: np.random.Generator, path: Path) -> None:
    """Inside `jax.jit`, a scalar argument is a 0-d tracer, and it too fills the selection."""
    data, fill = _draw(rng), np.float32(rng.standard_normal())
    what = f"inside `jax.jit`, `{_show(TRACED_FILL)} = s` with `s` a float32 scalar argument (a 0-d tracer)"
    with explained_ref_errors(what, path):
        got = _filled_under_jit(submission, data, fill)
    data[numpy_index(TRACED_FILL, AXES)] = fill
    assert_array(got, data, name=f"the buffer after {what}")


TRACED_FILL = {"dim": slice(1, 4), "layer": 2}


@in_executor
def _filled_under_jit(submission: ModuleType, data: np.ndarray, fill: np.ndarray) -> Any:
    """The buffer after `r[TRACED_FILL] = s` inside the grader's `jax.jit`, made where the learner's code runs (a
    jit cannot span two processes); the judge compares it."""
    @jax.jit
    def program(x: jax.Array, s: jax.Array) -> Any:
        r = submission.new_ref(x, AXES)
        r[TRACED_FILL] = s
        return _contents(submission, r)

    return program(jnp.asarray(data), jnp.asarray(fill))


# (selector, shape of a value that does not fit, the axes the selection keeps). The (1,) and (4, 1)
# values would broadcast; the last selection drops the middle axis, so a message naming every axis
# of the ref never lists its axes together.
REFUSED = (({"layer": 1}, (5, 3), ("head", "dim")),
           ({"dim": slice(0, 2)}, (4, 3), AXES),
           ({"layer": 0}, (5,), ("head", "dim")),
           ({"layer": 0}, (1,), ("head", "dim")),
           ({"head": 1}, (4, 1), ("layer", "dim")))


def _lists_in_order(text: str, names: tuple[str, ...]) -> bool:
    """Whether `text` names the axes `names` one after another, with no other axis name between them."""
    named = [w for w in re.findall(r"[A-Za-z_]\w*", text) if w in AXES]
    return any(named[i:i + len(names)] == list(names) for i in range(len(named)))


@pytest.mark.judge
def test_mismatched_write_refused(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A value of another shape is refused with a ValueError listing the selection's axes, and nothing is written"""
    data = _draw(rng)
    r = submission.new_ref(jnp.asarray(data), AXES)
    for sel, shape, names in REFUSED:
        what = f"`{_show(sel)} = value` with a value of shape {shape}"
        try:
            r[sel] = jnp.ones(shape, jnp.float32)
        except ValueError as exc:
            said = str(exc).splitlines()[0][:160] if str(exc) else ""
            missing = [n for n in names if n not in str(exc)]
            check(not missing, f"{what} raised a ValueError that does not name the selection's axes "
                               f"{names} (it says: {said!r}). JAX's own shape error speaks of positions; "
                               "check the shape yourself before the store and name the axes.")
            check(_lists_in_order(str(exc), names),
                  f"{what} raised a ValueError that names axes, but never lists the selection's own axes {names} "
                  f"together (it says: {said!r}). Naming every axis of the ref does not say which axes the "
                  "value had to fit; name the axes the selection keeps, in order.")
        except Exception as exc:  # noqa: BLE001 - any other exception is the wrong one
            fail(f"{what} raised {_learner_error(exc, submission_path)}; raise a ValueError naming the axes.")
        else:
            single = (" A one-element array is not a scalar: only a 0-d value (or a Python number) fills the "
                      "selection, and any other shape must equal the selection's." if math.prod(shape) == 1 else
                      " Only a scalar is filled in; a value that would broadcast is still the wrong shape.")
            fail(f"{what} was accepted, but the selection has the shape "
                 f"{data[numpy_index(sel, AXES)].shape}; refuse it with a ValueError.{single}")
        assert_array(_contents(submission, r), data, name=f"the buffer after the refused {what}")


@pytest.mark.judge
def test_unknown_axis_refused(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """An unknown axis name is refused with a KeyError or ValueError that names it"""
    r = submission.new_ref(jnp.asarray(_draw(rng)), AXES)

    def read() -> None:
        r[{"time": 0}]

    def write() -> None:
        r[{"layer": 0, "time": 1}] = 0.0

    for action, what in ((read, "r[{'time': 0}]"), (write, "r[{'layer': 0, 'time': 1}] = 0.0")):
        try:
            action()
        except (KeyError, ValueError) as exc:
            check("time" in str(exc), f"`{what}` raised {type(exc).__name__} without naming the axis "
                                      f"'time' (it says: {str(exc)[:160]!r}).")
            continue
        except Exception as exc:  # noqa: BLE001 - any other exception is the wrong one
            fail(f"`{what}` raised {_learner_error(exc, submission_path)}; raise a KeyError or ValueError "
                 "naming 'time'.")
        fail(f"`{what}` was accepted although there is no axis 'time' (the axes are {AXES}); a name "
             "that is not an axis is a mistake, so refuse it with a KeyError or ValueError naming it.")


@pytest.mark.judge
def test_freeze(submission: ModuleType, rng: np.random.Generator) -> None:
    """`freeze` returns the buffer's contents as a jax.Array"""
    data = _draw(rng)
    r = submission.new_ref(jnp.asarray(data), AXES)
    try:
        assert_array(submission.freeze(r), data, name="`freeze(r)` of a fresh ref")
    except CheckFailed as exc:
        fail(f"{exc}. `freeze` ends the reference and hands the buffer over as a plain array: return "
             "`jax.freeze` of the `jax.Ref` itself.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_under_jit(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Creation, reads, writes and `freeze` work inside `jax.jit`"""
    data, row = _draw(rng), _draw(rng, (4, 3))
    with explained_ref_errors("inside `jax.jit`, the program", submission_path):
        read, frozen = _program_under_jit(submission, data, row)
    data[:, 1, 0:5:2] = row[:, :3]
    data[-1] = 0.5
    assert_array(read, data[0:4:2, :, 3], name="`r[{'dim': 3, 'layer': slice(0, 4, 2)}]` inside `jax.jit`")
    assert_array(frozen, data, name="`freeze(r)` inside `jax.jit` after two writes")


@in_executor
def _program_under_jit(submission: ModuleType, data: np.ndarray, row: np.ndarray) -> tuple[Any, Any]:
    """A read and `freeze` after two writes, all inside the grader's `jax.jit`, made where the learner's code runs."""
    @jax.jit
    def program(x: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
        r = submission.new_ref(x, AXES)
        r[{"head": 1, "dim": slice(0, 5, 2)}] = v[:, :3]
        r[{"layer": -1}] = jnp.zeros(r.shape[1:], r.dtype) + 0.5
        return r[{"dim": 3, "layer": slice(0, 4, 2)}], submission.freeze(r)

    return program(jnp.asarray(data), jnp.asarray(row))


@in_executor
def _freeze_trace(submission: ModuleType, x: jax.Array) -> Any:
    """The trace of `freeze(new_ref(x, AXES))`, made where the learner's code runs; the judge counts its primitives."""
    return jax.make_jaxpr(lambda x: submission.freeze(submission.new_ref(x, AXES)))(x)


@pytest.mark.judge
def test_freeze_in_jaxpr(submission: ModuleType, rng: np.random.Generator) -> None:
    """`freeze` ends the reference with `jax.freeze`, not with a read"""
    closed = _freeze_trace(submission, jnp.asarray(_draw(rng)))
    counts = primitive_counts(closed)
    check(counts["freeze"] == 1 and not counts["get"],
          f"`freeze(new_ref(x, axes))` traces to {counts['freeze']} `freeze` and {counts['get']} load(s); "
          "expected one `freeze` and no load. Reading `ref[...]` copies the buffer and leaves the ref "
          "alive; `jax.freeze(ref)` hands the buffer over and ends the reference.")


def _leaf_kinds(leaves: list[Any]) -> str:
    """'1 jax.Ref, 3 str' for a message about pytree leaves."""
    kinds: dict[str, int] = {}
    for leaf in leaves:
        name = "jax.Ref" if isinstance(leaf, jax.Ref) else type(leaf).__name__
        kinds[name] = kinds.get(name, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items())


@pytest.mark.judge
@pytest.mark.points(2)
def test_pytree(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A NamedRef is a pytree whose only leaf is its `jax.Ref`, so a write inside `jax.jit` reaches the caller"""
    data, row = _draw(rng), _draw(rng, (4, 5))
    with explained_ref_errors("a write inside `jax.jit` to a NamedRef argument", submission_path):
        buffer = _written_through_jit(submission, data, row)
    data[:, 2] = row
    assert_array(buffer, data, name="the caller's buffer after `jax.jit(write)(r, v)` wrote `r[{'head': 2}] = v`")


@in_executor
def _written_through_jit(submission: ModuleType, data: np.ndarray, row: np.ndarray) -> Any:
    """The caller's buffer after `jax.jit(write)(r, v)`, made where the learner's code runs, once the NamedRef has
    shown itself a pytree of one `jax.Ref` leaf there (a shape that can only fail the check, never pass it)."""
    r = submission.new_ref(jnp.asarray(data), AXES)
    leaves, treedef = jax.tree_util.tree_flatten(r)
    if len(leaves) == 1 and leaves[0] is r:
        fail("flattening a NamedRef gives the NamedRef itself as its only leaf: it is not registered as "
             "a pytree, so `jax.jit` cannot take it. Register the class with the `jax.Ref` as its only "
             "child and the names as static aux data.")
    check(len(leaves) == 1 and isinstance(leaves[0], jax.Ref),
          f"flattening a NamedRef gives {len(leaves)} leaves ({_leaf_kinds(leaves)}); it should give one, "
          "the `jax.Ref`. The names belong in the static aux data, not among the children.")
    try:
        again = jax.tree_util.tree_unflatten(treedef, leaves)
    except Exception as exc:  # noqa: BLE001 - explained below
        fail(f"rebuilding a NamedRef from its leaf raised {_learner_error(exc, Path(submission.__file__))}; "
             "unflattening must wrap the ref it is given, not make a new one from it.")
    again_leaves = jax.tree_util.tree_leaves(again)
    check(again_leaves and again_leaves[0] is leaves[0] and tuple(again.axes) == AXES,
          "unflattening a NamedRef does not give back the same ref with the same names; wrap the given "
          "leaf as it is (a new ref would be a copy that writes never reach).")

    def write(ref: Any, v: jax.Array) -> None:
        ref[{"head": 2}] = v

    jax.jit(write)(r, jnp.asarray(row))
    return leaves[0][...]


def _loaded_too_much(shape: tuple[int, ...] | None, selection: tuple[int, ...]) -> str:
    """What a load of `shape` says about a read of a selection of shape `selection`, for a message."""
    if shape is None:
        return "a load of unknown shape"
    if tuple(shape) == SHAPE:
        return "the whole buffer was read and the value sliced afterwards"
    got, want = math.prod(shape), math.prod(selection)
    if got > want:
        return (f"it brings in {got} elements for the {want} selected: part of the index (an int or a step) "
                "was applied to the value after the load, not in it")
    return f"it brings in {got} elements, not the {want} selected"


@pytest.mark.judge
@pytest.mark.points(2)
def test_read_one_load(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A read is one load of just the selection"""
    data = _draw(rng)
    for sel, shape in ((COUNTED, (3, 3)), ({"head": 0, "dim": slice(1, 5)}, (4, 4))):
        trace = refs_in(*_access_trace(submission, f"`{_show(sel)}`", data, sel), path=submission_path)
        loads, stores = trace.loads(), trace.stores()
        seen = describe_accesses(trace.accesses)
        check(not stores, f"reading `{_show(sel)}` also writes the buffer ({seen}); a read only loads.")
        check(len(loads) == 1, f"reading `{_show(sel)}` makes {len(loads)} loads ({seen}); build one index "
                               "from the names and load once.")
        check(moves_selection(loads[0], shape),
              f"reading `{_show(sel)}` loads shape {loads[0].value_shape} ({seen}), but the selection has "
              f"shape {shape}: {_loaded_too_much(loads[0].value_shape, shape)}. Turn the names, ints included, "
              "into one index so the load brings in only the selected elements.")


def _what_a_write_loads(loads: list[Any], selection: tuple[int, ...]) -> str:
    """'the whole buffer', 'the selection it overwrites' or 'part of the buffer', for a message."""
    if any(a.value_shape is not None and tuple(a.value_shape) == SHAPE for a in loads):
        return "the whole buffer"
    if all(moves_selection(a, selection) for a in loads):
        return "the selection it is about to overwrite"
    return "part of the buffer"


@pytest.mark.judge
@pytest.mark.points(2)
def test_write_one_store(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """A write is one store of just the selection, and no load"""
    data = _draw(rng)
    for sel, value in ((COUNTED, jnp.ones((3, 3))), ({"head": 0}, 1.5)):
        trace = refs_in(*_access_trace(submission, f"`{_show(sel)} = value`", data, sel, value, True),
                        path=submission_path)
        loads, stores = trace.loads(), trace.stores()
        seen = describe_accesses(trace.accesses)
        want = (3, 3) if sel is COUNTED else (4, 5)
        check(not loads, f"writing `{_show(sel)} = value` loads {_what_a_write_loads(loads, want)} ({seen}). "
                         "A write needs no read: the shape and dtype are known from the ref's type (`ref.shape`, "
                         "`ref.dtype`) and the index, so never load to learn them, and store just the selection.")
        check(len(stores) == 1 and moves_selection(stores[0], want),
              f"writing `{_show(sel)} = value` makes {seen}; expected one store of shape {want}, just the "
              "selection.")
