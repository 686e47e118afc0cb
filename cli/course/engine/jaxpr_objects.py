"""The judge's reading of a trace the executor sent (`course.engine.jaxprs`): JAX's own jaxpr objects, built from text.

Every part of the text is checked before anything is built from it: table numbers in range, a jaxpr
holding only jaxprs listed before it (so no walk can loop), tags, classes and dtypes from fixed
lists, types that are JAX's abstract values. Objects of the listed classes are made without running
their constructors (`object.__new__`, then their fields): nothing the text says runs here. What is
malformed raises `WireError`.
"""

from __future__ import annotations

import enum
import importlib
import json
import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.engine import wire
from course.engine.jaxprs import CLASSES, MAGIC, fields_of

__all__ = ["Frame", "Traceback", "Unsent", "decode"]

MAX_TEXT = 64 << 20
_MAX_DEPTH = 64
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


@dataclass(frozen=True)
class Frame:
    """One frame of an equation's traceback, as JAX's traceback frames name their parts."""

    file_name: str
    function_name: str
    line_num: int


@dataclass(frozen=True)
class Traceback:
    """Where an equation was made, innermost frame first (only the frames: no code objects cross)."""

    frames: tuple[Frame, ...]

    def raw_frames(self) -> tuple[list[Any], list[Any]]:
        """No code objects: JAX's own summaries of this traceback find no frame of the user's."""
        return [], []


def decode(blob: bytes) -> Any:
    """The `ClosedJaxpr` that `encode` wrote as `blob`; WireError if it is not one."""
    head = len(MAGIC) + 8
    if not isinstance(blob, bytes) or not blob.startswith(MAGIC) or len(blob) < head:
        raise wire.WireError("a trace is not one")
    size = int.from_bytes(blob[len(MAGIC):head], "big")
    if size > MAX_TEXT or head + size > len(blob):
        raise wire.WireError("a trace's text is cut short or too long")
    try:
        doc = json.loads(blob[head:head + size])
    except (ValueError, RecursionError):
        raise wire.WireError("a trace is not JSON") from None
    if not isinstance(doc, dict) or doc.get("v") != 1:
        raise wire.WireError("a trace is not one this judge reads")
    reader = _Reader(doc, _arrays(doc.get("arrays"), blob[head + size:]))
    closed = reader.value(doc.get("root"), 0)
    from jax._src import core

    if not isinstance(closed, core.ClosedJaxpr):
        raise wire.WireError("a trace holds no closed jaxpr")
    return closed


def _arrays(table: Any, data: bytes) -> list[np.ndarray]:
    """The arrays a trace's table places in `data`, each checked against its dtype, shape and bytes."""
    if not isinstance(table, list):
        raise wire.WireError("a trace's arrays are malformed")
    arrays = []
    for entry in table:
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[1], list)
                and all(type(d) is int and d >= 0 for d in entry[1]) and all(type(n) is int and n >= 0
                                                                         for n in entry[2:])):
            raise wire.WireError("a trace's array is malformed")
        kind, shape, offset, nbytes = wire.dtype(entry[0]), entry[1], entry[2], entry[3]
        if nbytes != math.prod(shape) * kind.itemsize or offset + nbytes > len(data):
            raise wire.WireError("a trace's array does not match its bytes")
        arrays.append(np.frombuffer(data[offset:offset + nbytes], dtype=kind).reshape(shape).copy())
    return arrays


def _ints(value: Any, below: int) -> list[int]:
    """A list of table numbers, each in `range(below)`."""
    if not isinstance(value, list) or not all(type(i) is int and 0 <= i < below for i in value):
        raise wire.WireError("a trace's table numbers are out of range")
    return value


class _Reader:
    """Builds one trace's objects; its jaxprs in order, each from those before it."""

    def __init__(self, doc: dict[str, Any], arrays: list[np.ndarray]) -> None:
        from jax._src import core

        self.doc, self.arrays, self.core = doc, arrays, core
        frames = doc.get("frames")
        if not isinstance(frames, list) or not all(
                isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], str)
                and type(f[2]) is int for f in frames):
            raise wire.WireError("a trace's frames are malformed")
        self.frames = [Frame(*f) for f in frames]
        tbs = doc.get("tbs")
        if not isinstance(tbs, list):
            raise wire.WireError("a trace's tracebacks are malformed")
        self.tbs = [Traceback(tuple(self.frames[i] for i in _ints(tb, len(self.frames)))) for tb in tbs]
        self.avals = doc.get("vars")
        if not isinstance(self.avals, list):
            raise wire.WireError("a trace's variables are malformed")
        self.vars: list[Any] = [None] * len(self.avals)
        self.built: list[Any] = []
        jaxprs = doc.get("jaxprs")
        if not isinstance(jaxprs, list):
            raise wire.WireError("a trace's jaxprs are malformed")
        for item in jaxprs:
            self.built.append(self.jaxpr(item))

    def aval(self, node: Any) -> Any:
        """A type: one of JAX's abstract values."""
        aval = self.value(node, 0)
        if not isinstance(aval, self.core.AbstractValue):
            raise wire.WireError("a trace's type is not one")
        return aval

    def var(self, index: Any) -> Any:
        """The variable numbered `index`, made once with its type."""
        (index,) = _ints([index], len(self.vars))
        if self.vars[index] is None:
            self.vars[index] = self.core.Var(self.aval(self.avals[index]))
        return self.vars[index]

    def atom(self, node: Any) -> Any:
        """A variable, a dropped output or a literal."""
        if isinstance(node, dict) and "lit" in node:
            return self.core.Literal(self.value(node["lit"], 0), self.aval(node.get("aval")))
        if isinstance(node, dict) and "drop" in node:
            return self.core.DropVar(self.aval(node["drop"]))
        return self.var(node)

    def jaxpr(self, node: Any) -> Any:
        """One jaxpr of the table, from the jaxprs before it."""
        if not isinstance(node, dict) or not all(isinstance(node.get(k), list) for k in ("c", "i", "e", "o")):
            raise wire.WireError("a trace's jaxpr is malformed")
        return self.core.Jaxpr([self.var(v) for v in node["c"]], [self.var(v) for v in node["i"]],
                               [self.atom(v) for v in node["o"]], [self.eqn(e) for e in node["e"]],
                               self.effects(node.get("fx")), debug_info=self.debug(node.get("d")))

    def eqn(self, node: Any) -> Any:
        """One equation, with JAX's primitive of its name and where it was made."""
        from jax._src import source_info_util

        if not isinstance(node, dict) or not isinstance(node.get("i"), list) or not isinstance(node.get("o"), list):
            raise wire.WireError("a trace's equation is malformed")
        params = node.get("a")
        if not isinstance(params, dict):
            raise wire.WireError("a trace's equation has no parameters")
        tb = node.get("tb")
        traceback = None if tb == -1 else self.tbs[_ints([tb], len(self.tbs))[0]]
        info = source_info_util.SourceInfo(traceback, source_info_util.NameStack())
        return self.core.JaxprEqn([self.atom(v) for v in node["i"]], [self.atom(v) for v in node["o"]],
                                  _primitive(node.get("p")), {str(k): self.value(v, 0) for k, v in params.items()},
                                  self.effects(node.get("fx")), info, _context())

    def effects(self, node: Any) -> frozenset[Any]:
        """The effects among those sent that are JAX's effects of the listed classes (others say nothing here)."""
        values = self.value(node, 0) if node is not None else []
        if not isinstance(values, list):
            return frozenset()
        return frozenset(v for v in values if isinstance(v, self.core.Effect))

    def debug(self, node: Any) -> Any:
        """A jaxpr's debug information: the function's name and place, its arguments' names."""
        if node is None:
            return None
        args, results = node.get("args") if isinstance(node, dict) else 0, node.get("results")
        if not (isinstance(node.get("for"), str) and isinstance(node.get("src"), str)
                and (args is None or (isinstance(args, list) and all(a is None or isinstance(a, str) for a in args)))
                and (results is None or (isinstance(results, list) and all(isinstance(r, str) for r in results)))):
            raise wire.WireError("a trace's debug information is malformed")
        return self.core.DebugInfo(node["for"], node["src"], None if args is None else tuple(args),
                                   None if results is None else tuple(results))

    def value(self, node: Any, depth: int) -> Any:
        """A parameter, type, literal or constant from its tagged JSON value."""
        if depth > _MAX_DEPTH:
            raise wire.WireError("a trace's value is nested too deeply")
        if node is None or type(node) in (bool, int, float, str):
            return node
        if isinstance(node, list):
            return [self.value(v, depth + 1) for v in node]
        if not isinstance(node, dict) or not isinstance(node.get("@"), str):
            raise wire.WireError("a trace's value is malformed")
        return _TAGS.get(node["@"], _unknown)(self, node, depth + 1)


def _unknown(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    raise wire.WireError(f"a trace's value has the unknown tag {node['@']!r}")


def _seq(r: _Reader, node: dict[str, Any], depth: int, key: str = "v") -> list[Any]:
    """The values listed under `key`."""
    items = node.get(key)
    if not isinstance(items, list):
        raise wire.WireError("a trace's sequence is malformed")
    return [r.value(v, depth) for v in items]


def _dict(r: _Reader, node: dict[str, Any], depth: int) -> dict[Any, Any]:
    keys, values = _seq(r, node, depth, "k"), _seq(r, node, depth, "v")
    if len(keys) != len(values):
        raise wire.WireError("a trace's dict is malformed")
    try:
        return dict(zip(keys, values, strict=True))
    except TypeError:
        raise wire.WireError("a trace's dict has a key that is no key") from None


def _array(r: _Reader, node: dict[str, Any]) -> np.ndarray:
    (index,) = _ints([node.get("a")], len(r.arrays))
    return r.arrays[index]


def _dtype(name: Any) -> Any:
    """A dtype of the wire's list, or one of the extended ones a kernel's refs carry."""
    if name in wire.DTYPES:
        return wire.dtype(name)
    if name not in _EXTENDED:
        raise wire.WireError(f"a trace names the dtype {name!r}")
    from jax import dtypes

    return np.dtype(dtypes.float0)


def _typed(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    from jax._src import literals

    dtype, value = _dtype(node.get("dt")), node.get("v")
    if node["@"] == "ti" and type(value) is int:
        return literals.TypedInt(value, dtype)
    if node["@"] == "tf" and type(value) in (int, float):
        return literals.TypedFloat(float(value), dtype)
    raise wire.WireError("a trace's typed number is malformed")


def _typed_array(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    from jax._src import literals

    aval = r.value(node.get("aval"), depth)
    return literals.TypedNdArray(_array(r, node), aval if isinstance(aval, r.core.ShapedArray) else None)


def _jaxpr_ref(r: _Reader, node: dict[str, Any]) -> Any:
    """A jaxpr of the table, which must already be built: listed before the one that holds it."""
    (index,) = _ints([node.get("j")], len(r.built))
    return r.built[index]


def _closed(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    return r.core.ClosedJaxpr(_jaxpr_ref(r, node), _seq(r, node, depth, "c"))


def _treedef(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """A tree structure from its node's type and data and its children's structures."""
    from jax import tree_util

    if node["@"] == "leaf":
        return tree_util.tree_structure(0)
    name = node.get("n")
    kind = {"tuple": tuple, "list": list, "dict": dict, "None": type(None)}.get(name) if isinstance(name, str) else None
    kind = kind or _class(name)
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


def _mesh(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """A mesh as its axes: sizes, names and types (the devices stay where they are)."""
    from jax._src import mesh

    sizes, names, types = node.get("sizes"), node.get("names"), _seq(r, node, depth, "types")
    if not (isinstance(sizes, list) and all(type(s) is int and s > 0 for s in sizes) and isinstance(names, list)
            and all(isinstance(n, str) for n in names) and len(sizes) == len(names) == len(types)
            and all(isinstance(t, mesh.AxisType) for t in types)):
        raise wire.WireError("a trace's mesh is malformed")
    return mesh.AbstractMesh(tuple(sizes), tuple(names), axis_types=tuple(types))


def _sharding(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """A named sharding: its mesh's axes, its partition spec and memory kind."""
    import jax

    mesh, spec, kind = r.value(node.get("mesh"), depth), r.value(node.get("spec"), depth), node.get("mk")
    if not isinstance(spec, jax.sharding.PartitionSpec) or not (kind is None or isinstance(kind, str)):
        raise wire.WireError("a trace's sharding is malformed")
    try:
        return jax.sharding.NamedSharding(mesh, spec, memory_kind=kind)
    except (TypeError, ValueError):
        raise wire.WireError("a trace's sharding is not one") from None


def _spec(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """A partition spec: per dimension None, an axis name or a tuple of them."""
    import jax

    parts, unreduced, reduced = _seq(r, node, depth), node.get("u"), node.get("r")
    names = (unreduced or []) + (reduced or [])
    if not (all(p is None or isinstance(p, str) or (isinstance(p, tuple) and all(isinstance(a, str) for a in p))
                for p in parts) and isinstance(unreduced, list) and isinstance(reduced, list)
            and all(isinstance(n, str) for n in names)):
        raise wire.WireError("a trace's partition spec is malformed")
    try:
        return jax.sharding.PartitionSpec(*parts, unreduced=frozenset(unreduced), reduced=frozenset(reduced))
    except (TypeError, ValueError):
        raise wire.WireError("a trace's partition spec is not one") from None


def _manual(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """The mesh axes a type varies over (or is unreduced or reduced over), as JAX interns them."""
    parts = {k: node.get(k) for k in ("varying", "unreduced", "reduced")}
    if not all(isinstance(v, list) and all(isinstance(a, str) for a in v) for v in parts.values()):
        raise wire.WireError("a trace's manual axes are malformed")
    try:
        return r.core.ManualAxisType(**{k: frozenset(v) for k, v in parts.items()})
    except ValueError:
        raise wire.WireError("a trace's manual axes are not one") from None


def _effect(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """A read, write or update of a jaxpr's input: the variable (or position) it is of."""
    from jax._src import effects

    cls = _class(node.get("c"))
    if not issubclass(cls, effects.JaxprInputEffect):
        raise wire.WireError("a trace's effect is not one")
    if "var" in node:
        return cls(r.var(node["var"]))
    (position,) = _ints([node.get("n")], 1 << 20)
    return cls(position)


def _unspecified(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    from jax._src import named_sharding

    return named_sharding.UNSPECIFIED


def _class(key: Any) -> type:
    """The listed class `key` names; WireError for any other."""
    where = CLASSES.get(key) if isinstance(key, str) else None
    if where is None:
        raise wire.WireError(f"a trace names the class {key!r}, which may not cross")
    try:
        return getattr(importlib.import_module(where[0]), where[1])
    except (ImportError, AttributeError):
        raise wire.WireError(f"this judge has no class {key!r}") from None


def _enum(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    cls = _class(node.get("c"))
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)) or not isinstance(node.get("v"), str):
        raise wire.WireError("a trace's enum is malformed")
    try:
        return cls[node["v"]]
    except KeyError:
        raise wire.WireError("a trace's enum member is not one") from None


def _object(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    """An object of a listed class, its fields set as sent; its constructor does not run."""
    cls = _class(node.get("c"))
    fields = node.get("f")
    if isinstance(cls, type) and issubclass(cls, enum.Enum) or not isinstance(fields, dict) \
            or set(fields) != set(fields_of(cls)):
        raise wire.WireError("a trace's object is malformed")
    made = object.__new__(cls)
    for name in fields_of(cls):
        object.__setattr__(made, name, r.value(fields[name], depth))
    return made


def _unsent(r: _Reader, node: dict[str, Any], depth: int) -> Any:
    named, shown = node.get("fn"), node.get("s")
    return Unsent(str(node.get("c", ""))[:100], str(node.get("r", ""))[:400],
                  FunctionName(named[:200]) if isinstance(named, str) else None,
                  shown[:400] if isinstance(shown, str) else None)


_TAGS = {
    "t": lambda r, n, d: tuple(_seq(r, n, d)), "fs": lambda r, n, d: frozenset(_seq(r, n, d)), "d": _dict,
    "ti": _typed, "tf": _typed, "tnd": _typed_array, "nd": lambda r, n, d: _array(r, n),
    "ng": lambda r, n, d: _array(r, n)[()], "dt": lambda r, n, d: _dtype(n.get("v")),
    "cj": _closed, "j": lambda r, n, d: _jaxpr_ref(r, n), "tree": _treedef, "leaf": _treedef, "mesh": _mesh,
    "enum": _enum, "o": _object, "x": _unsent, "ns": _sharding, "ps": _spec, "mat": _manual, "eff": _effect,
    "unspec": _unspecified,
}

_PRIMITIVES: dict[str, Any] = {}
_CONTEXT: list[Any] = []


def _primitive(name: Any) -> Any:
    """JAX's primitive called `name` (of the modules loaded here), or a stand-in of that name."""
    if not isinstance(name, str) or not 0 < len(name) <= 200:
        raise wire.WireError("a trace's primitive has no name")
    if name not in _PRIMITIVES:
        from jax._src import core

        for module in ("jax.experimental.pallas", "jax.experimental.pallas.tpu", "jax.experimental.shard_map"):
            importlib.import_module(module)
        for mod_name, module in list(sys.modules.items()):
            if mod_name.startswith("jax") and module is not None:
                for value in list(vars(module).values()):
                    if isinstance(value, core.Primitive):
                        _PRIMITIVES.setdefault(value.name, value)
        if name not in _PRIMITIVES:
            _PRIMITIVES[name] = core.Primitive(name)  # a primitive of no module loaded here: named as sent
    return _PRIMITIVES[name]


def _context() -> Any:
    """The context JAX gives an equation traced here by default."""
    if not _CONTEXT:
        from jax._src import core

        _CONTEXT.append(core.JaxprEqnContext())
    return _CONTEXT[0]
