"""Loads and stores of the `jax.Ref`s a plain function is given, and JAX's ref errors in plain words.

`trace_refs(fn, *args)` traces `fn(*args)`; every `jax.Ref` among the leaves of `args` (a bare
ref, or one inside a pytree such as a named view over it) is followed through `jit`, loops and
conditionals by the same walk that counts a kernel's loads and stores (`course.grading.observe.kernels.kernels`).
Each access carries the shape of what it loaded or stored, its region and the learner's line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.feedback import CheckFailed, fail
from course.grading.judge.source import describe_exception, learner_frames, learner_location, raised_in
from course.grading.observe.kernels.kernels import Access, accesses_in

__all__ = ["RefTrace", "describe_accesses", "explained_ref_errors", "moves_selection", "ref_error_hint", "ref_leaves",
           "ref_trace", "refs_in", "trace_refs"]


def ref_leaves(tree: Any) -> list[tuple[bool, Any]]:
    """The pytree leaves of `tree` (a learner's NamedRef, say) as (is a `jax.Ref`, value), each ref read
    from the ref itself, so a check of what was written never depends on the learner's own read. In a
    judge's check `tree` is the learner's object held by the executor, which reads it there."""
    leaves_there = getattr(type(tree), "_course_leaves", None)
    if leaves_there is not None:  # `course.engine.judge.proxies.RemoteObject`
        return leaves_there(tree)
    leaves = jax.tree_util.tree_leaves(tree)
    return [(True, leaf[...]) if isinstance(leaf, jax.Ref) else (False, leaf) for leaf in leaves]


@dataclass(frozen=True)
class RefTrace:
    """The loads, stores and updates that one traced call made to the refs among its arguments."""

    jaxpr: Any
    ref_names: tuple[str, ...]
    accesses: tuple[Access, ...]

    def of(self, name: str | None = None, *kinds: str) -> list[Access]:
        """The accesses of ref `name` (every ref when None), optionally only of the given kinds."""
        return [a for a in self.accesses
                if (name is None or a.name == name) and (not kinds or a.kind in kinds)]

    def loads(self, name: str | None = None) -> list[Access]:
        """Loads, counting an `addupdate` as a load too."""
        return self.of(name, "load", "update")

    def stores(self, name: str | None = None) -> list[Access]:
        """Stores, counting an `addupdate` as a store too."""
        return self.of(name, "store", "update")


def trace_refs(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> RefTrace:
    """Trace `fn(*args)` and list each load, store and update of every `jax.Ref` leaf of `args`."""
    return refs_in(*ref_trace(fn, *args), path=path)


def ref_trace(fn: Callable[..., Any], *args: Any) -> tuple[Any, tuple[str, ...], tuple[int, ...]]:
    """The trace of `fn(*args)`, its arguments' leaves' names, and which leaves are `jax.Ref`s: what `refs_in` reads
    (an `in_executor` observation returns it, for the judge to read)."""
    closed = jax.make_jaxpr(fn)(*args)
    leaves = jax.tree_util.tree_flatten_with_path(args)[0]
    debug = getattr(closed.jaxpr, "debug_info", None)
    given = tuple(getattr(debug, "arg_names", None) or ())
    names = tuple(
        given[i] if len(given) == len(leaves) and given[i] else f"args{jax.tree_util.keystr(key)}"
        for i, (key, _) in enumerate(leaves)
    )
    return closed, names, tuple(i for i, (_, leaf) in enumerate(leaves) if isinstance(leaf, jax.Ref))


def refs_in(closed: Any, names: tuple[str, ...], refs: tuple[int, ...], path: Path | None = None) -> RefTrace:
    """Each load, store and update, in `closed`, of the arguments at positions `refs` (named by `names`)."""
    invars = closed.jaxpr.invars
    positions = {invars[i]: i for i in refs if 0 <= i < len(invars) and i < len(names)}
    found = accesses_in(closed.jaxpr, positions, tuple(names), path)
    return RefTrace(jaxpr=closed, ref_names=tuple(names[i] for i in positions.values()),
                    accesses=tuple(found))


def moves_selection(access: Access, shape: tuple[int, ...]) -> bool:
    """Whether an access moved exactly as many elements as a selection of `shape`, in its layout.

    Axes of length 1 are ignored, so `ref[pl.ds(i, 1), 2:5]` followed by a reshape counts as
    the selection `ref[i, 2:5]`: both move the same elements.
    """
    if access.value_shape is None:
        return False
    return [d for d in access.value_shape if d != 1] == [d for d in shape if d != 1]


def describe_accesses(accesses: Sequence[Access]) -> str:
    """'a load of shape (4, 3) at line 12, a store of shape (3,) at line 14', or 'no load or store'."""
    if not accesses:
        return "no load or store"
    parts = []
    for a in accesses:
        article = "an" if a.kind == "update" else "a"
        shape = f" of shape {a.value_shape}" if a.value_shape is not None else ""
        where = f" at line {a.line}" if a.line is not None else ""
        parts.append(f"{article} {a.kind}{shape}{where}")
    return ", ".join(parts)


# Fragments of JAX 0.10's ref errors, each with what it means for the learner.
_HINTS = (
    ("TypedInt", "under `jax.jit`, JAX refuses a Python `int` next to a stepped slice in one ref "
                 "index (`Invalid type of idxer: TypedInt`); pass the int as `np.int32(i)`"),
    ("Invalid dtype for `swap`", "a `jax.Ref` never casts: a written value must already have the "
                                 "ref's dtype, so cast it first (`jnp.asarray(value, dtype)`)"),
    ("Invalid dtype for `addupdate`", "a `jax.Ref` never casts: cast the value to the ref's dtype first"),
    ("Invalid shape for `swap`", "a `jax.Ref` never broadcasts: a written value must have exactly "
                                 "the selection's shape (fill a scalar with `jnp.broadcast_to`)"),
    ("Out of bound indexer", "an int index lies outside the ref; JAX checks this eagerly but clamps "
                             "it silently under `jax.jit`, so check bounds yourself"),
    ("Out of bound slice", "JAX refuses a ref slice that starts at or past the end of its axis, even an empty "
                           "one, where NumPy gives an empty array: an empty selection is a view like any other, "
                           "so give it an index inside the axis (`slice(0, 0)`)"),
)


def ref_error_hint(exc: BaseException) -> str | None:
    """What a JAX ref error means for the learner, in one clause, or None when it is not one."""
    text = str(exc)
    for fragment, hint in _HINTS:
        if fragment in text:
            return hint
    if isinstance(exc, NotImplementedError) and raised_in(exc) == "at":
        return ("`ref.at[...]` works only inside `jax.jit`; outside it JAX raises "
                "NotImplementedError, so keep the view's indices yourself and index the ref once")
    return None


@contextlib.contextmanager
def explained_ref_errors(what: str, path: Path | None = None) -> Iterator[None]:
    """Fail saying that `what` raised, when the block's exception is a JAX ref error or comes from the learner's file.

    The message names `what` (the selector the grader used), the exception, the learner's line and,
    for a ref error, what it means. Any other exception (the grader's own) goes through.
    """
    try:
        yield
    except CheckFailed:
        raise
    except Exception as exc:
        hint = ref_error_hint(exc)
        if hint is None and not learner_frames(exc.__traceback__, path):
            raise
        where = learner_location(exc.__traceback__, path)
        fail(f"{what} raised {describe_exception(exc)}{where}" + (f"; {hint}." if hint else "."))
