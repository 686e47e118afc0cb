"""Selectors over named axes: what NumPy makes of them, Hypothesis strategies that draw them, and their code.

A selector picks part of an array whose axes have names: a dict `{axis: int | slice}` (axes not
named are taken whole), `...`, or a positional int, slice or tuple read as NumPy reads it. These
helpers give a grader the expected answer (`numpy_view`: NumPy views, so a write through one
reaches the data), random selectors valid for a view (`selectors`), and a selector written as
Python for a reproduction line (`selector_code`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ViewCase", "axis_entries", "numpy_index", "numpy_view", "selector_code", "selector_entries",
           "selectors", "view_cases"]


def selector_entries(sel: Any, axes: tuple[str, ...]) -> tuple[Any, ...]:
    """One int or slice per axis: dict names placed by position, `...` expanded, trailing axes whole."""
    if isinstance(sel, dict):
        return tuple(sel.get(a, slice(None)) for a in axes)
    items = sel if isinstance(sel, tuple) else (sel,)
    if any(i is Ellipsis for i in items):
        k = next(j for j, i in enumerate(items) if i is Ellipsis)
        items = items[:k] + (slice(None),) * (len(axes) - len(items) + 1) + items[k + 1:]
    return items + (slice(None),) * (len(axes) - len(items))


def numpy_index(sel: Any, axes: tuple[str, ...]) -> tuple[Any, ...]:
    """The NumPy index `sel` means (a dict by name, anything else as NumPy reads it), always giving a view."""
    index = selector_entries(sel, axes) if isinstance(sel, dict) else sel if isinstance(sel, tuple) else (sel,)
    # A trailing `...` makes NumPy return a (0-d) view even when ints take every axis.
    return index if any(i is Ellipsis for i in index) else (*index, ...)


def numpy_view(data: np.ndarray, axes: tuple[str, ...], chain: Any = ()) -> tuple[np.ndarray, tuple[str, ...]]:
    """The NumPy view at the end of a chain of selectors, and the names of the axes it keeps."""
    for sel in chain:
        kept = tuple(a for a, e in zip(axes, selector_entries(sel, axes), strict=True) if isinstance(e, slice))
        data, axes = data[numpy_index(sel, axes)], kept
    return data, axes


def selector_code(sel: Any) -> str:
    """A selector written as Python: `{'a': slice(1, 4)}`, `(0, ...)`, `...`."""
    if sel is Ellipsis:
        return "..."
    if isinstance(sel, slice):
        if sel.start is None and sel.step is None:
            return f"slice({sel.stop})"
        parts = [sel.start, sel.stop] + ([sel.step] if sel.step is not None else [])
        return f"slice({', '.join(map(str, parts))})"
    if isinstance(sel, dict):
        return "{" + ", ".join(f"{k!r}: {selector_code(v)}" for k, v in sel.items()) + "}"
    if isinstance(sel, tuple):
        return "(" + ", ".join(map(selector_code, sel)) + ("," if len(sel) == 1 else "") + ")"
    return repr(sel)


def _fit(s: slice, n: int) -> slice:
    """`s` if it selects something of n elements, else its bounds swapped, else everything."""
    for candidate in (s, slice(s.stop, s.start, s.step)):
        if len(range(n)[candidate]):
            return candidate
    return slice(None, None, s.step)


def axis_entries(n: int) -> Any:
    """A strategy for one axis of length n: a never-empty slice (bounds may lie outside) or an int."""
    from hypothesis import strategies as st

    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    slices = st.builds(slice, bound, bound, st.sampled_from((None, 1, 2, 3))).map(lambda s: _fit(s, n))
    return st.one_of(slices, st.integers(-n, n - 1))


def selectors(axes: tuple[str, ...], shape: tuple[int, ...]) -> Any:
    """A strategy for selectors valid on a view: a dict, a positional index (at most one `...`), or `...`."""
    from hypothesis import strategies as st

    @st.composite
    def draw_one(draw: Any) -> Any:
        kinds = ("dict", "positional", "dict", "positional", "ellipsis") if axes else ("ellipsis",)
        kind = draw(st.sampled_from(kinds))
        if kind == "ellipsis":
            return ...
        if kind == "dict":
            names = draw(st.lists(st.sampled_from(axes), min_size=1, unique=True))
            return {a: draw(axis_entries(shape[axes.index(a)])) for a in names}
        if draw(st.booleans()):  # with an ellipsis between some leading and some trailing axes
            before = draw(st.integers(0, len(shape)))
            after = draw(st.integers(0, len(shape) - before))
            lead = [draw(axis_entries(n)) for n in shape[:before]]
            trail = [draw(axis_entries(n)) for n in shape[len(shape) - after:]]
            return (*lead, ..., *trail)
        items = tuple(draw(axis_entries(n)) for n in shape[: draw(st.integers(1, len(shape)))])
        return items[0] if len(items) == 1 and draw(st.booleans()) else items

    return draw_one()


NAMES = ("a", "b", "c", "x", "y", "batch", "head", "time")


@dataclass(frozen=True)
class ViewCase:
    """A buffer's shape and axis names, a chain of views, and a final selector (None: the whole view)."""

    shape: tuple[int, ...]
    axes: tuple[str, ...]
    chain: tuple[Any, ...]
    final: Any
    scalar: bool = False  # for a write: store a scalar rather than an array of the selection's shape

    def target(self, data: np.ndarray) -> tuple[np.ndarray, tuple[Any, ...]]:
        """The NumPy view at the end of the chain, and the index of the final selector in it."""
        view, axes = numpy_view(data, self.axes, self.chain)
        return view, numpy_index(... if self.final is None else self.final, axes)


def view_cases(*, writes: bool = False, max_ndim: int = 4, max_steps: int = 3, sizes: tuple[int, int] = (2, 4),
               names: tuple[str, ...] = NAMES) -> Any:
    """A strategy for ViewCases: each selector of the chain is drawn against the view the steps before leave."""
    from hypothesis import strategies as st

    @st.composite
    def draw_one(draw: Any) -> ViewCase:
        ndim = draw(st.integers(1, max_ndim))
        axes = tuple(draw(st.lists(st.sampled_from(names), min_size=ndim, max_size=ndim, unique=True)))
        shape = tuple(draw(st.lists(st.integers(*sizes), min_size=ndim, max_size=ndim)))
        chain: list[Any] = []
        view, kept = np.zeros(shape), axes
        for _ in range(draw(st.integers(0, max_steps))):
            chain.append(draw(selectors(kept, view.shape)))
            view, kept = numpy_view(view, kept, chain[-1:])
        final = draw(selectors(kept, view.shape))
        if not writes and chain and draw(st.booleans()):
            final = None
        return ViewCase(shape, axes, tuple(chain), final, scalar=writes and draw(st.booleans()))

    return draw_one()
