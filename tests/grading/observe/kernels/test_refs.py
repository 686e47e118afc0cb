"""Tests of `observe.kernels.refs`: loads and stores of a plain function's ref arguments, ref errors explained."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from course.grading import CheckFailed
from course.grading.observe.kernels.refs import (
    describe_accesses,
    explained_ref_errors,
    moves_selection,
    ref_error_hint,
    trace_refs,
)

HERE = Path(__file__)


@jax.tree_util.register_pytree_node_class
class Box:
    """A pytree holding one ref and a static label, as a named view over a ref would."""

    def __init__(self, ref: jax.Ref, label: str) -> None:
        self.ref, self.label = ref, label

    def tree_flatten(self) -> tuple[tuple[jax.Ref], str]:
        """The ref is the only leaf."""
        return (self.ref,), self.label

    @classmethod
    def tree_unflatten(cls, label: str, children: tuple[jax.Ref]) -> Box:
        """Wrap the given leaf."""
        return cls(children[0], label)


def window_read(r: jax.Ref) -> jax.Array:
    """One load of a (2, 3) window."""
    return r[1:3, 2:5]


def whole_then_slice(r: jax.Ref) -> jax.Array:
    """One load of the whole buffer, sliced afterwards."""
    return r[...][1:3, 2:5]


def test_one_load_with_the_selection_shape_and_line() -> None:
    """A window read is one load whose value shape is the window's, on this file's line."""
    r = jax.new_ref(jnp.zeros((4, 6)))
    trace = trace_refs(window_read, r, path=HERE)
    (load,) = trace.loads()
    assert trace.stores() == [] and load.kind == "load"
    assert load.value_shape == (2, 3) and load.shape == (4, 6)
    assert load.line == window_read.__code__.co_firstlineno + 2
    assert load.text() == "r[1:3, 2:5]"


def test_whole_buffer_load_shows_the_full_shape() -> None:
    """Reading everything and slicing the value is told apart from a window read by its shape."""
    (load,) = trace_refs(whole_then_slice, jax.new_ref(jnp.zeros((4, 6))), path=HERE).loads()
    assert load.value_shape == (4, 6)


def test_refs_inside_pytrees_jit_and_loops_are_followed() -> None:
    """A ref leaf of a pytree argument is followed into `jit` and `fori_loop`; arrays are not refs."""
    @jax.jit
    def step(box: Box, x: jax.Array) -> None:
        def body(i: jax.Array, c: None) -> None:
            box.ref[i] = box.ref[i] + x
            return c

        lax.fori_loop(0, 4, body, None)
        box.ref.addupdate(jnp.ones((4, 3)))

    trace = trace_refs(step, Box(jax.new_ref(jnp.zeros((4, 3))), "acc"), jnp.ones(3), path=HERE)
    assert trace.ref_names == ("box[0]",)
    assert [(a.kind, a.value_shape) for a in trace.accesses] == [
        ("load", (3,)), ("store", (3,)), ("update", (4, 3))]
    assert len(trace.loads("box[0]")) == 2 and len(trace.stores()) == 2
    assert trace.of("x") == []


def test_two_ref_arguments_are_named_apart() -> None:
    """Each ref argument keeps its own name, so a copy from one to another is two accesses."""
    def copy(src: jax.Ref, dst: jax.Ref) -> None:
        dst[...] = src[...]

    trace = trace_refs(copy, jax.new_ref(jnp.zeros(3)), jax.new_ref(jnp.zeros(3)))
    assert trace.ref_names == ("src", "dst")
    assert [(a.name, a.kind) for a in trace.accesses] == [("src", "load"), ("dst", "store")]
    assert describe_accesses(trace.accesses).startswith("a load of shape (3,) at line ")
    assert describe_accesses([]) == "no load or store"


def test_jax_ref_errors_are_explained() -> None:
    """JAX's ref errors are recognised and told in course terms; other errors are not."""
    r = jax.new_ref(jnp.zeros((4, 3, 5)))

    def write_int() -> None:
        r[0] = jnp.zeros((3, 5), jnp.int32)

    def stepped_with_int() -> None:
        jax.jit(lambda ref: ref[::2, 1])(r)

    def empty_at_the_end() -> None:
        r[4:4]  # an empty slice starting at the end of the axis: NumPy's view is empty, JAX refuses it

    for action, words in ((write_int, "never casts"), (stepped_with_int, "np.int32"),
                          (lambda: r.at[1:3], "only inside `jax.jit`"), (empty_at_the_end, "`slice(0, 0)`")):
        with pytest.raises(Exception) as info:
            action()
        assert words in (ref_error_hint(info.value) or "")
    assert ref_error_hint(ValueError("something else")) is None


def test_explained_ref_errors_fails_with_the_hint_and_lets_others_through() -> None:
    """Inside the block, a ref error becomes a CheckFailed; another exception passes unchanged."""
    r = jax.new_ref(jnp.zeros(3))
    failure = pytest.raises(CheckFailed, match=r"writing 1 raised ValueError: Invalid dtype .* never casts")
    with failure, explained_ref_errors("writing 1", HERE):
        r[...] = np.ones(3, np.int32)
    with pytest.raises(ZeroDivisionError), explained_ref_errors("dividing"):
        _ = 1 / 0


def test_moves_selection_ignores_axes_of_length_one() -> None:
    """A `pl.ds(i, 1)` load reshaped afterwards moves the selection; a whole-buffer load does not."""
    from jax.experimental import pallas as pl

    r = jax.new_ref(jnp.zeros((4, 6)))
    (one,) = trace_refs(lambda ref: ref[pl.ds(2, 1), 1:4].reshape(3), r).loads()
    (whole,) = trace_refs(whole_then_slice, r).loads()
    assert one.value_shape == (1, 3) and moves_selection(one, (3,))
    assert not moves_selection(whole, (2, 3)) and moves_selection(whole, (4, 6))


def test_explained_ref_errors_names_what_raised_in_the_learners_file() -> None:
    """Any exception raised in the learner's file fails with what the grader was doing and the line."""

    def learners_read(sel: object) -> None:
        """Stands for a learner's view that cannot take `...`."""
        return [name for name in sel]

    said = (r"^`r\[\.\.\.\]` raised TypeError: 'ellipsis' object is not iterable "
            r"at test_refs.py line \d+: `return \[name for name in sel\]`\.$")
    failure = pytest.raises(CheckFailed, match=said)
    with failure, explained_ref_errors("`r[...]`", HERE):
        learners_read(...)
    with pytest.raises(IndexError), explained_ref_errors("`r[...]`", HERE.with_name("elsewhere.py")):
        learners_read({})[0]  # no frame of the file given as the learner's: it goes through
