"""Fresh arguments put in the order a chain's call had its own: leaves matched by their place, not their order."""

from __future__ import annotations

from typing import Any

import numpy as np

from course.engine.judge.arguments import arranged, places
from course.engine.wire import wire


def _sent(args: tuple, kwargs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The array leaves of a call, in the order they are sent, and their places."""
    leaves: list[Any] = []
    buffers: list[bytes] = []

    def describe(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, np.ndarray):
            return None
        leaves.append(value)
        return {"data": value}

    return leaves, places(wire.encode(list(args), buffers, describe), wire.encode(dict(kwargs), buffers, describe))


def test_a_dict_built_in_another_order_is_put_in_the_calls_order() -> None:
    """The chain's call had `b` before `w`; fresh params built `w` first are put back in the call's order."""
    w, b, x = np.zeros((4, 2)), np.ones(2), np.full(3, 2.0)
    first, at_first = _sent(({"b": b, "w": w}, x), {})
    fresh, at_fresh = _sent(({"w": w + 1, "b": b + 1}, x + 1), {})
    assert [a.shape for a in first] == [(2,), (4, 2), (3,)] and [a.shape for a in fresh] == [(4, 2), (2,), (3,)]
    ordered = arranged(fresh, at_fresh, at_first)
    assert ordered is not None and [a.shape for a in ordered] == [(2,), (4, 2), (3,)]
    assert ordered[0] is fresh[1] and ordered[2] is fresh[2]


def test_positions_and_keywords_are_places_too() -> None:
    """A leaf passed by keyword is not the one passed at a position, nor one nested a level deeper."""
    a, c = np.zeros(2), np.ones(2)
    _, by_position = _sent((a, c), {})
    _, by_keyword = _sent((a,), {"c": c})
    _, nested = _sent(((a, c),), {})
    assert arranged([a, c], by_keyword, by_position) is None
    assert arranged([a, c], nested, by_position) is None
    assert arranged([a, c], by_position, by_position) == [a, c]


def test_other_arguments_do_not_fit() -> None:
    """A missing leaf, or one more, is no arrangement; no places known keeps the leaves as they are."""
    a, c = np.zeros(2), np.ones(2)
    _, two = _sent(({"a": a, "c": c},), {})
    _, one = _sent(({"a": a},), {})
    _, other = _sent(({"a": a, "d": c},), {})
    assert arranged([a], one, two) is None
    assert arranged([a, c], other, two) is None
    assert arranged([a, c], two, None) == [a, c]
