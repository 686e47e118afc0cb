"""The parameter values of a trace, rebuilt in the judge from their tagged JSON form (`course.engine.wire.jaxprs`).

Each tag has its reader here: containers, typed numbers and arrays, dtypes, random key types, jaxprs
of the table (only those built already), tree structures, enums and objects of the classes `CLASSES`
lists, made without running their constructors; anything else arrived as its text (`Unsent`).
Shardings and effects have readers of their own (`course.engine.wire.trace_shardings`, `trace_effects`).
`r`, in every reader, is the trace's reader (`course.engine.wire.jaxpr_objects`), which rebuilds nested
values, variables and jaxprs. What is malformed raises `WireError`.
"""

from __future__ import annotations

import enum
import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.engine.wire import trace_effects, trace_shardings, wire
from course.engine.wire.jaxpr_classes import CLASSES, fields_of

__all__ = ["FunctionName", "Unsent", "class_of", "numbers", "read_tagged"]

_EXTENDED = ("float0",)
"""Dtype names besides the array ones that a trace may carry (a kernel's semaphore types cross as objects)."""

@dataclass(frozen=True)
class FunctionName:
    """What JAX prints of a function in a parameter: its name."""

    func_name: str


@dataclass(frozen=True)
class Unsent:
    """A parameter that crossed as its text only (a function, an object of a class not listed)."""

    type_name: str
    text: str
    debug_info: FunctionName | None = None
    shown: str | None = None
    """Its `str`, where that differs from its `repr` (`text`)."""

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text if self.shown is None else self.shown


def numbers(value: Any, below: int) -> list[int]:
    """A list of table numbers, each in `range(below)`."""
    if not isinstance(value, list) or not all(type(i) is int and 0 <= i < below for i in value):
        raise wire.WireError("a trace's table numbers are out of range")
    return value


def _unknown(r: Any, node: dict[str, Any], depth: int) -> Any:
    raise wire.WireError(f"a trace's value has the unknown tag {node['@']!r}")


def _seq(r: Any, node: dict[str, Any], depth: int, key: str = "v") -> list[Any]:
    """The values listed under `key`."""
    items = node.get(key)
    if not isinstance(items, list):
        raise wire.WireError("a trace's sequence is malformed")
    return [r.value(v, depth) for v in items]


def _dict(r: Any, node: dict[str, Any], depth: int) -> dict[Any, Any]:
    keys, values = _seq(r, node, depth, "k"), _seq(r, node, depth, "v")
    if len(keys) != len(values):
        raise wire.WireError("a trace's dict is malformed")
    try:
        return dict(zip(keys, values, strict=True))
    except TypeError:
        raise wire.WireError("a trace's dict has a key that is no key") from None


def _array(r: Any, node: dict[str, Any]) -> np.ndarray:
    (index,) = numbers([node.get("a")], len(r.arrays))
    return r.arrays[index]


def _dtype(name: Any) -> Any:
    """A dtype of the wire's list, or one of the extended ones a kernel's refs carry."""
    if name in wire.DTYPES:
        return wire.dtype(name)
    if name not in _EXTENDED:
        raise wire.WireError(f"a trace names the dtype {name!r}")
    from jax import dtypes

    return np.dtype(dtypes.float0)


def _typed(r: Any, node: dict[str, Any], depth: int) -> Any:
    from jax._src import literals

    dtype, value = _dtype(node.get("dt")), node.get("v")
    if node["@"] == "ti" and type(value) is int:
        return literals.TypedInt(value, dtype)
    if node["@"] == "tf" and type(value) in (int, float):
        return literals.TypedFloat(float(value), dtype)
    raise wire.WireError("a trace's typed number is malformed")


def _typed_array(r: Any, node: dict[str, Any], depth: int) -> Any:
    from jax._src import literals

    aval = r.value(node.get("aval"), depth)
    return literals.TypedNdArray(_array(r, node), aval if isinstance(aval, r.core.ShapedArray) else None)


def _random(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A random key's dtype, or a random number generator, among those this JAX registers."""
    from jax._src.random import prng

    impl = prng.prngs.get(node.get("v")) if isinstance(node.get("v"), str) else None
    if impl is None:
        raise wire.WireError(f"a trace names the random generator {node.get('v')!r}, which this judge lacks")
    return prng.KeyTy(impl) if node["@"] == "key" else impl


def _jaxpr_ref(r: Any, node: dict[str, Any]) -> Any:
    """A jaxpr of the table, which must already be built: listed before the one that holds it."""
    (index,) = numbers([node.get("j")], len(r.built))
    return r.built[index]


def _closed(r: Any, node: dict[str, Any], depth: int) -> Any:
    return r.core.ClosedJaxpr(_jaxpr_ref(r, node), _seq(r, node, depth, "c"))


def _treedef(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A tree structure from its node's type and data and its children's structures."""
    from jax import tree_util

    if node["@"] == "leaf":
        return tree_util.tree_structure(0)
    name = node.get("n")
    kind = {"tuple": tuple, "list": list, "dict": dict, "None": type(None)}.get(name) if isinstance(name, str) else None
    kind = kind or class_of(name)
    kids = _seq(r, node, depth, "kids")
    if not all(isinstance(k, tree_util.PyTreeDef) for k in kids):
        raise wire.WireError("a trace's tree structure is malformed")
    from jax._src.tree_util import tracing_registry

    aux = r.value(node.get("aux"), depth)
    for registry in (tree_util.default_registry, tracing_registry):  # a view of a ref is a node when tracing only
        try:
            return tree_util.PyTreeDef.from_node_data_and_children(registry, (kind, aux), kids)
        except RuntimeError:
            continue  # a type this registry does not know
        except (ValueError, TypeError):
            break
    raise wire.WireError("a trace's tree structure is not one")


def _manual(r: Any, node: dict[str, Any], depth: int) -> Any:
    """The mesh axes a type varies over (or is unreduced or reduced over), as JAX interns them."""
    parts = {k: node.get(k) for k in ("varying", "unreduced", "reduced")}
    if not all(isinstance(v, list) and all(isinstance(a, str) for a in v) for v in parts.values()):
        raise wire.WireError("a trace's manual axes are malformed")
    try:
        return r.core.ManualAxisType(**{k: frozenset(v) for k, v in parts.items()})
    except ValueError:
        raise wire.WireError("a trace's manual axes are not one") from None


def _effect(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A read, write or update of a jaxpr's input: the variable (or position) it is of."""
    from jax._src import effects

    cls = class_of(node.get("c"))
    if not issubclass(cls, effects.JaxprInputEffect):
        raise wire.WireError("a trace's effect is not one")
    if "var" in node:
        return cls(r.var(node["var"]))
    (position,) = numbers([node.get("n")], 1 << 20)
    return cls(position)


def class_of(key: Any) -> type:
    """The listed class `key` names; WireError for any other."""
    where = CLASSES.get(key) if isinstance(key, str) else None
    if where is None:
        raise wire.WireError(f"a trace names the class {key!r}, which may not cross")
    try:
        return getattr(importlib.import_module(where[0]), where[1])
    except (ImportError, AttributeError):
        raise wire.WireError(f"this judge has no class {key!r}") from None


def _enum(r: Any, node: dict[str, Any], depth: int) -> Any:
    cls = class_of(node.get("c"))
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)) or not isinstance(node.get("v"), str):
        raise wire.WireError("a trace's enum is malformed")
    try:
        return cls[node["v"]]
    except KeyError:
        raise wire.WireError("a trace's enum member is not one") from None


def _object(r: Any, node: dict[str, Any], depth: int) -> Any:
    """An object of a listed class, its fields set as sent; its constructor does not run."""
    cls = class_of(node.get("c"))
    fields = node.get("f")
    if isinstance(cls, type) and issubclass(cls, enum.Enum) or not isinstance(fields, dict) \
            or set(fields) != set(fields_of(cls)):
        raise wire.WireError("a trace's object is malformed")
    made = object.__new__(cls)
    for name in fields_of(cls):
        object.__setattr__(made, name, r.value(fields[name], depth))
    return made


def _named_tuple(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A named tuple of a listed class, its items as sent (made as a tuple is: no constructor of its own runs)."""
    cls = class_of(node.get("c"))
    items = node.get("v")
    if not (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(items, list)
            and len(items) == len(getattr(cls, "_fields", ()))):
        raise wire.WireError("a trace's named tuple is malformed")
    return tuple.__new__(cls, [r.value(v, depth) for v in items])


def _unsent(r: Any, node: dict[str, Any], depth: int) -> Any:
    named, shown = node.get("fn"), node.get("s")
    return Unsent(str(node.get("c", ""))[:100], str(node.get("r", ""))[:400],
                  FunctionName(named[:200]) if isinstance(named, str) else None,
                  shown[:400] if isinstance(shown, str) else None)


def read_tagged(r: Any, node: dict[str, Any], depth: int) -> Any:
    """The value a tagged node (`{"@": tag, ...}`) stands for, by its tag's reader."""
    return _TAGS.get(node["@"], _unknown)(r, node, depth)


_TAGS = {
    "t": lambda r, n, d: tuple(_seq(r, n, d)), "fs": lambda r, n, d: frozenset(_seq(r, n, d)), "d": _dict,
    "ti": _typed, "tf": _typed, "tnd": _typed_array, "nd": lambda r, n, d: _array(r, n),
    "ng": lambda r, n, d: _array(r, n)[()], "dt": lambda r, n, d: _dtype(n.get("v")),
    "cj": _closed, "j": lambda r, n, d: _jaxpr_ref(r, n), "tree": _treedef, "leaf": _treedef,
    "enum": _enum, "o": _object, "nt": _named_tuple, "x": _unsent, "mat": _manual, "eff": _effect,
    "key": _random, "prng": _random,
    **trace_shardings.READERS, **trace_effects.READERS,
}
