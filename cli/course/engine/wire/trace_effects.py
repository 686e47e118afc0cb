"""Effects in a trace: written in the executor, read back in the judge as JAX's own effect objects.

Two kinds cross. A read, write or update of a jaxpr's input (`JaxprInputEffect`) names its variable or
position. Every other effect JAX makes once, at import, and compares by identity (a debug callback's,
an ordered IO callback's, a kernel's semaphore effect): it crosses by the name `SINGLETONS` gives it and
is that very object again, so the judge lowers and compiles a trace that holds it as the executor would.
An effect of neither kind crosses as its text and is dropped from the rebuilt jaxpr's effects.
`write` writes both kinds; `READERS` reads the singletons, and `course.engine.wire.jaxpr_values` the input
effects, whose classes it looks up among those that may cross.
"""

from __future__ import annotations

import importlib
from typing import Any

from course.engine.wire import wire

__all__ = ["READERS", "SINGLETONS", "write"]

SINGLETONS = {
    "debug": ("jax._src.debugging", "debug_effect"),
    "ordered_debug": ("jax._src.debugging", "ordered_debug_effect"),
    "io": ("jax._src.callback", "_IOEffect"),
    "ordered_io": ("jax._src.callback", "_OrderedIOEffect"),
    "no_dce": ("jax._src.lax.lax", "no_dce_effect"),
    "internal_mutable_array": ("jax._src.core", "internal_mutable_array_effect"),
    "single_side_collective": ("jax._src.lax.parallel", "single_side_collective_effect"),
    "ffi": ("jax._src.ffi", "_FfiEffect"),
    "comms": ("jax._src.pallas.core", "comms_effect"),
    "semaphore": ("jax._src.pallas.primitives", "sem_effect"),
    "delay": ("jax._src.pallas.primitives", "delay_effect"),
    "kernel_prng": ("jax._src.pallas.mosaic.primitives", "prng_effect"),
    "kernel_trace": ("jax._src.pallas.mosaic.primitives", "trace_effect"),
    "mxu": ("jax._src.pallas.mosaic.primitives", "mxu_effect"),
}
"""The effects JAX makes once, by name: the module and attribute that hold each."""

_NAMES: dict[int, str] = {}
_OBJECTS: dict[str, Any] = {}


def _table() -> dict[int, str]:
    """Each singleton effect's name, by the object's id (the objects live as long as their modules)."""
    if not _NAMES:
        for name, (module, attribute) in SINGLETONS.items():
            try:
                found = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError):
                continue  # not in this JAX: nothing of it to send or read
            _NAMES[id(found)], _OBJECTS[name] = name, found
    return _NAMES


def write(w: Any, value: Any, depth: int, key: str | None) -> dict[str, Any] | None:
    """The tagged form of an effect (`key`: the listed class of an input effect); None for any other value."""
    from jax._src import effects

    if isinstance(value, effects.JaxprInputEffect) and key is not None:
        given = value.input
        return {"@": "eff", "c": key, **({"n": given} if type(given) is int else {"var": w.var(given)})}
    name = _table().get(id(value))
    if name is not None and _OBJECTS[name] is value:
        return {"@": "single", "n": name}
    return None


def _read_singleton(r: Any, node: dict[str, Any], depth: int) -> Any:
    """The effect JAX made once under this name."""
    _table()
    name = node.get("n")
    if not isinstance(name, str) or name not in _OBJECTS:
        raise wire.WireError(f"a trace names the effect {name!r}, which this judge lacks")
    return _OBJECTS[name]


READERS = {"single": _read_singleton}
"""The reader of each tag `write` gives."""
