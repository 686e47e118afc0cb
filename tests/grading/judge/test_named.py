"""Tests of `judge.named`: named selectors as NumPy reads them, drawn at random, written as code."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from course.grading.judge.named import (
    ViewCase,
    numpy_index,
    numpy_view,
    selector_code,
    selector_entries,
    selectors,
    view_cases,
)

AXES = ("layer", "head", "dim")
DATA = np.arange(60).reshape(4, 3, 5)


def test_dict_entries_follow_the_axes_not_the_dict() -> None:
    """A dict is placed by name; unnamed axes are whole; `...` and short tuples are expanded."""
    assert selector_entries({"dim": 2, "layer": 1}, AXES) == (1, slice(None), 2)
    assert selector_entries((0, ..., 1), AXES) == (0, slice(None), 1)
    assert selector_entries(slice(1, 3), AXES) == (slice(1, 3), slice(None), slice(None))
    assert np.array_equal(DATA[numpy_index({"dim": 2, "layer": 1}, AXES)], DATA[1, :, 2])


def test_numpy_index_always_gives_a_view() -> None:
    """Even ints on every axis give a 0-d view, so a write through it reaches the data."""
    data = DATA.copy()
    view = data[numpy_index({"layer": 3, "head": 2, "dim": 4}, AXES)]
    view[...] = -1
    assert view.shape == () and data[3, 2, 4] == -1


def test_chains_compose_and_track_the_kept_axes() -> None:
    """A chain of selectors is a chain of NumPy views; ints drop their axis's name."""
    view, axes = numpy_view(DATA, AXES, ({"layer": slice(1, None, 2)}, {"layer": -1}, (..., slice(0, 5, 2))))
    assert axes == ("head", "dim")
    assert np.array_equal(view, DATA[3, :, ::2])


def test_selector_code_is_python_that_means_the_same() -> None:
    """The code of a selector evaluates back to an equal selector."""
    for sel in ({"a": slice(1, 4), "b": -1}, (0, ..., slice(None, None, 2)), ..., (slice(1, 2),), 3,
                {"a": slice(None)}, slice(None, 5)):
        code = selector_code(sel)
        assert eval(code) == sel, code  # noqa: S307 - the text is made by the function under test
    assert selector_code({"layer": slice(None)}) == "{'layer': slice(None)}"  # as a learner writes it


@settings(max_examples=40, database=None, deadline=None)
@given(st.data())
def test_drawn_selectors_are_valid_and_never_empty(data: st.DataObject) -> None:
    """Every drawn selector is accepted by NumPy on its view and selects at least one element."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    axes = (*AXES, "x")[: len(shape)]
    sel = data.draw(selectors(axes, shape))
    picked, kept = numpy_view(np.zeros(shape), axes, (sel,))
    assert picked.size >= 1 and len(kept) == picked.ndim
    if isinstance(sel, dict):
        assert set(sel) <= set(axes)


@settings(max_examples=30, database=None, deadline=None)
@given(view_cases(writes=True))
def test_view_cases_chain_valid_selectors_to_a_writable_target(case: ViewCase) -> None:
    """Each drawn chain applies on NumPy; a write through the case's target reaches the data."""
    assert 1 <= len(case.shape) <= 4 and len(set(case.axes)) == len(case.axes) and len(case.chain) <= 3
    data = np.zeros(case.shape)
    target, index = case.target(data)
    target[index] = 1
    assert data.sum() == target[index].size >= 1


def test_view_case_target_of_a_whole_view_read() -> None:
    """With no final selector the target is the whole view at the end of the chain."""
    case = ViewCase((4, 3), ("a", "b"), ({"a": slice(1, 3)},), None)
    target, index = case.target(np.arange(12).reshape(4, 3))
    assert np.array_equal(target[index], np.arange(12).reshape(4, 3)[1:3])
