"""Values at the executor's end of the link: arguments read from the judge's data, answers and exceptions as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from course.engine.wire import wire
from course.engine.wire.placement import array_from, array_leaf, describe_mesh, mesh_from
from course.grading.judge.source import learner_frames, raised_in

MAX_TEXT = 4000


class _Unsendable(Exception):
    """What the learner's code returned is no value the link carries (nested too deeply, say): their doing."""

    def __init__(self, unsent: wire.WireError) -> None:
        super().__init__(str(unsent))
        self.unsent = unsent


def incoming(data: np.ndarray, node: dict[str, Any]) -> Any:
    """An argument as the judge made it: a jax.Array (with its sharding), a NumPy array or scalar, a mesh, a
    dtype, or a type to trace at."""
    kind = node.get("kind")
    if kind == "np":
        return data
    if kind == "npscalar":
        return data[()]
    if kind == "jax":
        return array_from(data, node)
    if kind == "mesh":
        return mesh_from(node.get("mesh"))
    if kind == "dtype":
        return wire.dtype(node.get("name"))
    if kind == "spec":  # a type to trace at
        import jax

        shape = node.get("of")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise wire.WireError("a type's shape is not one")
        return jax.ShapeDtypeStruct(tuple(shape), wire.dtype(node.get("as")))
    raise wire.WireError(f"an argument of kind {kind!r} is not one")


def outgoing(value: Any) -> dict[str, Any] | None:
    """How a returned leaf is sent: arrays as their data, a trace as `course.engine.wire.jaxprs` writes it, anything
    else named by its type."""
    import jax
    import jax.extend

    if isinstance(value, jax.sharding.Mesh):
        return {"data": np.zeros(0, np.float32), "kind": "mesh", "mesh": describe_mesh(value)}
    if isinstance(value, jax.extend.core.ClosedJaxpr):  # a trace: read in the judge as JAX's own objects
        from course.engine.wire.jaxprs import encode

        return {"data": np.frombuffer(encode(value), np.uint8), "kind": "jaxpr"}
    if isinstance(value, jax.Array):
        if value.is_deleted():
            return {"data": np.zeros(0, np.float32), "kind": "deleted", "type": "jax.Array"}
        return array_leaf(value)
    if isinstance(value, np.ndarray) and value.dtype.name in wire.DTYPES:
        return {"data": value, "kind": "np"}
    if isinstance(value, np.generic) and value.dtype.name in wire.DTYPES:
        return {"data": np.asarray(value), "kind": "npscalar"}
    kind = wire.dtype_of(value)
    if kind is not None and kind.name in wire.DTYPES:
        return {"data": np.zeros(0, np.float32), "kind": "dtype", "name": kind.name}
    return {"data": np.zeros(0, np.float32), "kind": "opaque", "type": type(value).__qualname__[:200],
            "module": str(type(value).__module__)[:200]}


def _position(value: Any) -> float:
    """A grader position from the judge's note; WireError if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise wire.WireError("a note of the judge's position is malformed")
    return value


def _raised(exc: BaseException, path: Path | None) -> dict[str, Any]:
    """An exception as data: its class names (outermost first), its text, and the learner's frames."""
    frames = learner_frames(exc.__traceback__, path)
    text = str(exc)
    # A callback's error (the TPU interpreter's) ends its long text with the cause: keep both ends.
    text = text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT // 2]}\n...\n{text[-MAX_TEXT // 2:]}"
    return {"types": [c.__name__ for c in type(exc).__mro__][:12], "text": text,
            "innermost": (raised_in(exc) or "")[:200],
            "frames": [[f.filename, f.lineno or 0, f.name, (f.line or "")[:300]] for f in frames[-8:]]}
