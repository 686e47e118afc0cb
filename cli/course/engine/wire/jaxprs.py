"""Jaxprs across the link: the executor traces the learner's function, the judge reads the trace as JAX's own objects.

Jaxprs do not pickle, and nothing the executor sends may be unpickled. `encode` writes a closed jaxpr
as JSON text and a list of arrays: a table of variables (each with its type), one of jaxprs (each
nested jaxpr before the one that holds it), one of source frames, and every parameter as a tagged
value. `decode` (`course.engine.wire.jaxpr_objects`) builds from that text real `ClosedJaxpr`, `Jaxpr`,
`JaxprEqn`, `Var` and `Literal` objects, JAX's own primitives found by name, and parameters of the
classes `CLASSES` lists only, so that the graders' walks read it as they read a trace made in their
own process. Anything else (a function, a class not listed) crosses as its text.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import numpy as np

from course.engine.wire.jaxpr_classes import class_key, fields_of

__all__ = ["encode"]

MAGIC = b"jaxpr/1\n"


def encode(closed: Any) -> bytes:
    """A closed jaxpr as bytes: `MAGIC`, the JSON text's length (8 bytes, big-endian), the text, and the bytes of
    the arrays it holds (literals, constants) back to back, as its table "arrays" places them."""
    writer = _Writer()
    root = writer.value(closed, 0)
    table, offset = [], 0
    for array in writer.arrays:
        table.append([str(array.dtype), list(array.shape), offset, array.nbytes])
        offset += array.nbytes
    doc = {"v": 1, "root": root, "vars": writer.avals, "jaxprs": writer.jaxprs, "frames": writer.frame_list,
           "tbs": writer.tb_list, "arrays": table}
    text = json.dumps(doc, separators=(",", ":"), allow_nan=True).encode()
    return b"".join([MAGIC, len(text).to_bytes(8, "big"), text, *(a.tobytes(order="C") for a in writer.arrays)])


class _Writer:
    """Writes one trace: its tables, filled as the walk meets variables, jaxprs and frames."""

    def __init__(self) -> None:
        self.var_ids: dict[int, int] = {}
        self.kept: list[Any] = []  # the variables numbered, alive so that their ids stay theirs
        self.avals: list[Any] = []
        self.jaxprs: list[Any] = []
        self.jaxpr_ids: dict[int, int] = {}
        self.frames: dict[tuple[str, str, int], int] = {}
        self.frame_list: list[list[Any]] = []
        self.tbs: dict[tuple[int, ...], int] = {}
        self.tb_list: list[list[int]] = []
        self.arrays: list[np.ndarray] = []

    def var(self, var: Any) -> int:
        """The number of a variable, defined with its type the first time it is met."""
        key = id(var)
        if key not in self.var_ids:
            self.var_ids[key] = len(self.avals)
            self.kept.append(var)
            self.avals.append(None)  # numbered first: its type may not name it
            self.avals[self.var_ids[key]] = self.value(var.aval, 0)
        return self.var_ids[key]

    def atom(self, atom: Any) -> Any:
        """A variable's number, a dropped output, or a literal's value and type."""
        from jax._src import core

        if isinstance(atom, core.Literal):
            return {"lit": self.value(atom.val, 0), "aval": self.value(atom.aval, 0)}
        if isinstance(atom, core.DropVar):
            return {"drop": self.value(atom.aval, 0)}
        return self.var(atom)

    def jaxpr(self, jaxpr: Any) -> int:
        """The number of an (open) jaxpr, written after every jaxpr it holds."""
        if id(jaxpr) in self.jaxpr_ids:
            return self.jaxpr_ids[id(jaxpr)]
        written = {
            "c": [self.var(v) for v in jaxpr.constvars], "i": [self.var(v) for v in jaxpr.invars],
            "e": [self.eqn(e) for e in jaxpr.eqns], "o": [self.atom(v) for v in jaxpr.outvars],
            "fx": self.value(list(jaxpr.effects), 0), "d": self.debug(jaxpr.debug_info),
        }
        self.jaxpr_ids[id(jaxpr)] = len(self.jaxprs)
        self.kept.append(jaxpr)
        self.jaxprs.append(written)
        return self.jaxpr_ids[id(jaxpr)]

    def eqn(self, eqn: Any) -> dict[str, Any]:
        """One equation: its primitive's name, operands, results, parameters, effects and source."""
        return {"p": eqn.primitive.name, "i": [self.atom(v) for v in eqn.invars],
                "o": [self.atom(v) for v in eqn.outvars],
                "a": {str(k): self.value(v, 0) for k, v in eqn.params.items()},
                "fx": self.value(list(eqn.effects), 0), "tb": self.traceback(eqn.source_info)}

    def debug(self, info: Any) -> Any:
        """What a jaxpr says of the function it traced: its name and place, its arguments' names."""
        if info is None:
            return None
        names = info.arg_names if isinstance(info.arg_names, tuple) else None
        paths = info.result_paths if isinstance(info.result_paths, tuple) else None
        return {"for": str(info.traced_for), "src": str(info.func_src_info),
                "args": None if names is None else [None if n is None else str(n) for n in names],
                "results": None if paths is None else [str(p) for p in paths]}

    def traceback(self, source_info: Any) -> int:
        """The number of an equation's traceback (innermost frame first), or -1 without one."""
        frames = getattr(getattr(source_info, "traceback", None), "frames", None)
        if frames is None:
            return -1
        ids = []
        for frame in frames:
            key = (str(frame.file_name), str(frame.function_name), int(frame.line_num))
            if key not in self.frames:
                self.frames[key] = len(self.frame_list)
                self.frame_list.append(list(key))
            ids.append(self.frames[key])
        if tuple(ids) not in self.tbs:
            self.tbs[tuple(ids)] = len(self.tb_list)
            self.tb_list.append(ids)
        return self.tbs[tuple(ids)]

    def array(self, value: Any) -> int | None:
        """The number of an array among those sent beside the text; None for a dtype no message carries."""
        from course.engine.wire import wire

        array = np.asarray(value)
        if array.dtype.name not in wire.DTYPES:
            return None
        self.arrays.append(array)
        return len(self.arrays) - 1

    def value(self, value: Any, depth: int) -> Any:
        """A parameter (or a type, a literal, a constant) as a tagged JSON value."""
        if depth > 48:
            return {"@": "x", "c": type(value).__name__, "r": "..."}
        if value is None or type(value) in (bool, int, float, str):
            return value
        tagged = _plain(self, value, depth)
        if tagged is not None:
            return tagged
        return _objects(self, value, depth)


def _plain(w: _Writer, value: Any, depth: int) -> dict[str, Any] | list[Any] | None:
    """Containers, numbers, arrays and dtypes as tagged values; None for anything else."""
    from jax._src import literals

    if isinstance(value, list):
        return [w.value(v, depth + 1) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return {"@": "t", "v": [w.value(v, depth + 1) for v in value]}
    if isinstance(value, dict) and type(value) is dict:
        return {"@": "d", "k": [w.value(k, depth + 1) for k in value], "v": [w.value(v, depth + 1)
                                                                           for v in value.values()]}
    if isinstance(value, frozenset | set):
        return {"@": "fs", "v": sorted((w.value(v, depth + 1) for v in value), key=repr)}
    if isinstance(value, literals.TypedInt | literals.TypedFloat):
        kind = "ti" if isinstance(value, literals.TypedInt) else "tf"
        return {"@": kind, "v": int(value) if kind == "ti" else float(value), "dt": str(value.dtype)}
    if isinstance(value, literals.TypedNdArray | np.ndarray | np.generic) and (index := w.array(value)) is None:
        return {"@": "x", "c": type(value).__name__, "r": repr(value)[:400]}
    if isinstance(value, literals.TypedNdArray):
        return {"@": "tnd", "a": index, "aval": w.value(getattr(value, "aval", None), depth + 1)}
    if isinstance(value, np.ndarray | np.generic):
        return {"@": "ng" if isinstance(value, np.generic) else "nd", "a": index}
    if isinstance(value, np.dtype):
        from jax import dtypes

        return {"@": "dt", "v": "float0" if value == dtypes.float0 else str(value)}
    return _random(value)


def _random(value: Any) -> dict[str, Any] | None:
    """A random key's dtype and a random number generator, by the name JAX registers the generator under."""
    from jax._src.random import prng

    if isinstance(value, prng.KeyTy):
        return {"@": "key", "v": str(value._impl.name)}
    if isinstance(value, prng.PRNGImpl):
        return {"@": "prng", "v": str(value.name)}
    return None


def _objects(w: _Writer, value: Any, depth: int) -> Any:
    """Jaxprs, tree structures, meshes, arrays and objects of the listed classes; anything else as its text."""
    import jax
    from jax import tree_util
    from jax._src import core

    from course.engine.wire import trace_effects, trace_shardings

    if isinstance(value, core.ClosedJaxpr):
        return {"@": "cj", "j": w.jaxpr(value.jaxpr), "c": [w.value(c, depth + 1) for c in value.consts]}
    if isinstance(value, core.Jaxpr):
        return {"@": "j", "j": w.jaxpr(value)}
    if isinstance(value, tree_util.PyTreeDef):
        return _treedef(w, value, depth)
    if (tagged := trace_shardings.write(w, value, depth)) is not None:
        return tagged
    if (tagged := trace_effects.write(w, value, depth, class_key(type(value)))) is not None:
        return tagged
    if isinstance(value, core.ManualAxisType):
        return {"@": "mat", **{k: sorted(map(str, getattr(value, k))) for k in ("varying", "unreduced", "reduced")}}
    if isinstance(value, jax.Array) and not value.is_deleted() and (index := w.array(value)) is not None:
        return {"@": "nd", "a": index}
    if (key := class_key(type(value))) is not None:
        if isinstance(value, enum.Enum):
            return {"@": "enum", "c": key, "v": value.name}
        if isinstance(value, tuple):  # a named tuple (a gather's dimension numbers): its items in order
            return {"@": "nt", "c": key, "v": [w.value(v, depth + 1) for v in value]}
        made = {f: w.value(getattr(value, f, None), depth + 1) for f in fields_of(type(value))}
        return {"@": "o", "c": key, "f": made}
    named = getattr(getattr(value, "debug_info", None), "func_name", None)  # JAX prints a function by it
    text, shown = repr(value)[:400], str(value)[:400]
    return {"@": "x", "c": type(value).__name__[:100], "r": text, **({"s": shown} if shown != text else {}),
            **({"fn": named[:200]} if isinstance(named, str) else {})}


def _treedef(w: _Writer, tree: Any, depth: int) -> dict[str, Any]:
    """A tree structure: its node's type and data, and its children's structures (a leaf has no node)."""
    node = tree.node_data()
    if node is None:
        return {"@": "leaf"}
    kind, aux = node
    builtin = {tuple: "tuple", list: "list", dict: "dict", type(None): "None"}.get(kind)
    name = builtin or class_key(kind)
    if name is None:
        return {"@": "x", "c": "PyTreeDef", "r": repr(tree)[:400]}
    return {"@": "tree", "n": name, "aux": w.value(aux, depth + 1),
            "kids": [_treedef(w, c, depth + 1) for c in tree.children()]}
