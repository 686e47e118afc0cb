"""Where each argument leaf of a call sits, so that the leaves of two calls are matched by place, not by order.

The executor numbers a call's argument leaves in the order they were sent, and a dict is sent in the order its keys
were inserted: `{"w": .., "b": ..}` and `{"b": .., "w": ..}` number the same leaves differently. A chain of programs
(`course.engine.judge.replay`) names its inputs by those numbers, so fresh arguments are put in the order the
chain's call had them, by each leaf's place: its position in a tuple or list, its key in a dict.
"""

from __future__ import annotations

import json
from typing import Any

Place = tuple[Any, ...]


def places(args: Any, kwargs: Any) -> list[Place]:
    """The place of each array leaf of a call's encoded `args` and `kwargs` (`wire.encode`'s nodes), in the order
    they were sent."""
    found: dict[int, Place] = {}
    _walk(args, (0,), found)
    _walk(kwargs, (1,), found)
    return [found[i] for i in sorted(found)]


def _walk(node: Any, place: Place, found: dict[int, Place]) -> None:
    """Note the place of each array leaf under `node`, by its buffer's number (the order it was sent in)."""
    if not isinstance(node, dict):
        return
    kind = node.get("t")
    if kind == "array" and isinstance(node.get("buf"), int):
        found[node["buf"]] = place
    elif kind in ("tuple", "list"):
        for i, item in enumerate(node.get("items", [])):
            _walk(item, (*place, i), found)
    elif kind == "dict":
        for key, value in zip(node.get("keys", []), node.get("values", []), strict=False):
            _walk(value, (*place, json.dumps(key, sort_keys=True)), found)


def arranged(leaves: list[Any], have: list[Place], want: list[Place] | None) -> list[Any] | None:
    """`leaves` (at places `have`) in the order of the places `want`; None when a place of `want` has no leaf, or
    the places differ in number. Without `want` (no places known), `leaves` as they are."""
    if want is None:
        return leaves
    if len(want) != len(leaves) or len(have) != len(leaves):
        return None
    at = dict(zip(have, leaves, strict=True))
    if len(at) != len(leaves) or any(place not in at for place in want):
        return None
    return [at[place] for place in want]
