"""The judge's reading of a trace sent by the executor (`jaxprs`): JAX's own jaxpr objects, built from text.

Every part of the text is checked before anything is built from it: table numbers in range, a jaxpr
holding only jaxprs listed before it (so no walk can loop), tags, classes and dtypes from fixed
lists, types that are JAX's abstract values. Parameter values are read by `course.engine.wire.jaxpr_values`;
objects of the listed classes are made without running their constructors (`object.__new__`, then
their fields): nothing the text says runs here. What is malformed raises `WireError`.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.engine.wire import wire
from course.engine.wire.jaxpr_values import Unsent, numbers, read_tagged
from course.engine.wire.jaxprs import MAGIC

__all__ = ["Frame", "Traceback", "Unsent", "decode"]

MAX_TEXT = 64 << 20
_MAX_DEPTH = 64


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

    def as_python_traceback(self) -> None:
        """No Python traceback to attach to an error raised while this equation is lowered."""
        return None


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
        self.tbs = [Traceback(tuple(self.frames[i] for i in numbers(tb, len(self.frames)))) for tb in tbs]
        self.avals = doc.get("vars")
        if not isinstance(self.avals, list):
            raise wire.WireError("a trace's variables are malformed")
        self.vars: list[Any] = [None] * len(self.avals)
        self.built: list[Any] = []
        self.stand_ins: dict[str, Any] = {}
        jaxprs = doc.get("jaxprs")
        if not isinstance(jaxprs, list):
            raise wire.WireError("a trace's jaxprs are malformed")
        for item in jaxprs:
            self.built.append(self.jaxpr(item))

    @staticmethod
    def unsent(type_name: str, text: str) -> Unsent:
        """A value that stays text here (a device this process does not have, say)."""
        return Unsent(type_name, text)

    def aval(self, node: Any) -> Any:
        """A type: one of JAX's abstract values."""
        aval = self.value(node, 0)
        if not isinstance(aval, self.core.AbstractValue):
            raise wire.WireError("a trace's type is not one")
        return aval

    def var(self, index: Any) -> Any:
        """The variable numbered `index`, made once with its type."""
        (index,) = numbers([index], len(self.vars))
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
        traceback = None if tb == -1 else self.tbs[numbers([tb], len(self.tbs))[0]]
        info = source_info_util.SourceInfo(traceback, source_info_util.NameStack())
        values = {str(k): self.value(v, 0) for k, v in params.items()}
        return self.core.JaxprEqn([self.atom(v) for v in node["i"]], [self.atom(v) for v in node["o"]],
                                  _primitive(node.get("p"), self.stand_ins), values, self.effects(node.get("fx")),
                                  info, _context())

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
        return read_tagged(self, node, depth + 1)


_PRIMITIVES: dict[str, Any] = {}
_SCANNED = [0]
"""How many modules were loaded when the primitives were last noted."""
_CONTEXT: list[Any] = []


def _primitive(name: Any, stand_ins: dict[str, Any]) -> Any:
    """JAX's primitive called `name` (of the modules loaded here), or a stand-in of that name, kept in `stand_ins`
    (one trace's): a name no module here defines never enters the table later gradings read."""
    if not isinstance(name, str) or not 0 < len(name) <= 200:
        raise wire.WireError("a trace's primitive has no name")
    if name not in _PRIMITIVES and len(sys.modules) != _SCANNED[0]:
        _scan_primitives()  # again only when modules were loaded since: a flood of made-up names costs one scan
    if name in _PRIMITIVES:
        return _PRIMITIVES[name]
    if name not in stand_ins:
        from jax._src import core

        stand_ins[name] = core.Primitive(name)
    return stand_ins[name]


def _scan_primitives() -> None:
    """Note every primitive of the JAX modules loaded here (Pallas's and `shard_map`'s among them), by name."""
    from jax._src import core

    for module in ("jax.experimental.pallas", "jax.experimental.pallas.tpu", "jax.experimental.shard_map"):
        importlib.import_module(module)
    for mod_name, module in list(sys.modules.items()):
        if mod_name.startswith("jax") and module is not None:
            for value in list(vars(module).values()):
                if isinstance(value, core.Primitive):
                    _PRIMITIVES.setdefault(value.name, value)
    _SCANNED[0] = len(sys.modules)


def _context() -> Any:
    """The context JAX gives an equation traced here by default."""
    if not _CONTEXT:
        from jax._src import core

        _CONTEXT.append(core.JaxprEqnContext())
    return _CONTEXT[0]
