"""The learner's objects a judge holds by number: the executor keeps them, and only their number crosses.

A function of the learner's may return an object that is no array or plain value (a view over a
`jax.Ref`, an instance of their class, a function). The executor keeps it here and sends its
number; the judge's `course.engine.judge.proxies.RemoteObject` asks for its attributes, methods and items
by that number, and sends the number back when a check passes the object to another function.
An object has one number however often it comes back, so `is` holds in the judge as it does here.
"""

from __future__ import annotations

from typing import Any

from course.engine.wire import wire

MAX_HELD = 1 << 20
"""At most this many objects held in one grading; past it, an object crosses by its type's name only."""


class Held:
    """The objects held for one judge, in the order they were first sent."""

    def __init__(self) -> None:
        self.objects: list[Any] = []
        self.numbers: dict[int, int] = {}
        """Each object's number, by its `id` (held, so no other object can take that id meanwhile)."""

    def get(self, number: Any) -> Any:
        """The object numbered `number`; WireError if the judge was never given one by that number."""
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < len(self.objects):
            raise wire.WireError("a request names an object the judge was never given")
        return self.objects[number]

    def keep(self, value: Any, node: dict[str, Any] | None) -> dict[str, Any] | None:
        """How `value` is sent: an object sent as only its type's name (`node`) is held, and sent by number."""
        if node is None or node.get("kind") != "opaque" or len(self.objects) >= MAX_HELD:
            return node
        if id(value) not in self.numbers:
            self.numbers[id(value)] = len(self.objects)
            self.objects.append(value)
        return {**node, "kind": "handle", "id": self.numbers[id(value)], "callable": callable(value)}


def behaves(value: Any, module: Any) -> bool:
    """Whether a tuple, list or dict is an object of the learner's `module` with behaviour of its own (a
    view written as a NamedTuple with methods): held, not sent as its items, which a record is."""
    kind = type(value)
    if kind.__module__ != getattr(module, "__name__", None):
        return False
    return any(not name.startswith("_") and (callable(member) or isinstance(member, property))
               for cls in kind.__mro__ if cls.__module__ == kind.__module__ for name, member in vars(cls).items())
