"""Meshes and shardings in the course's words: `P(...)` notation, equivalence, shard shapes and bytes.

Two shardings that place every element on the same devices can still differ under `==` (a mesh
with Explicit axes against the same devices with Auto axes, `P('x')` against `P('x', None)`), so
a check compares them with `is_equivalent_to(other, ndim)` and prints them as `P(...)`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from course.grading.feedback import fail

__all__ = [
    "assert_mesh",
    "assert_sharding",
    "per_device_bytes",
    "shard_shapes",
    "sharding_text",
    "spec_text",
]


def spec_text(spec: PartitionSpec | None) -> str:
    """A PartitionSpec written as in code, e.g. `P('x', 'y')` or `P()`."""
    if spec is None:
        return "no spec"
    parts = []
    for entry in spec:
        if entry is None:
            parts.append("None")
        elif isinstance(entry, tuple):
            parts.append("(" + ", ".join(repr(a) for a in entry) + ")")
        else:
            parts.append(repr(entry))
    return f"P({', '.join(parts)})"


def sharding_text(value: Any) -> str:
    """How an array (or a sharding) is laid out: `P('x', 'y')`, or which single device holds it."""
    sharding = getattr(value, "sharding", value)
    if isinstance(sharding, NamedSharding):
        return spec_text(sharding.spec)
    devices = getattr(sharding, "device_set", None)
    if devices is not None and len(devices) == 1:
        return f"one device only ({next(iter(devices))})"
    if getattr(sharding, "is_fully_replicated", False):
        return "replicated on every device (P())"
    return f"a {type(sharding).__name__}"


def assert_sharding(got: Any, expected: jax.sharding.Sharding, *, name: str, hint: str = "") -> None:
    """Fail unless `got` (an array) is laid out like `expected`, compared with `is_equivalent_to`."""
    sharding = getattr(got, "sharding", None)
    ndim = len(getattr(got, "shape", ()))
    if sharding is not None and sharding.is_equivalent_to(expected, ndim):
        return
    fail(f"{name} is sharded {sharding_text(got)}, expected {sharding_text(expected)} on the mesh "
         f"{_mesh_text(expected)}.{' ' + hint if hint else ''}")


def _mesh_text(sharding: Any) -> str:
    """The mesh of a NamedSharding as `{'x': 2, 'y': 4}`, or '' for other shardings."""
    mesh = getattr(sharding, "mesh", None)
    return str(dict(mesh.shape)) if mesh is not None else ""


def shard_shapes(x: jax.Array) -> list[tuple[int, ...]]:
    """The shape of the block each device holds, in device order."""
    return [tuple(s.data.shape) for s in sorted(x.addressable_shards, key=lambda s: s.device.id)]


def per_device_bytes(tree: Any) -> int:
    """Bytes one device holds of every leaf of `tree` (arrays or ShapeDtypeStructs with a sharding)."""
    total = 0
    for leaf in jax.tree_util.tree_leaves(tree):
        shape = leaf.sharding.shard_shape(tuple(leaf.shape))
        total += math.prod(shape) * np.dtype(leaf.dtype).itemsize
    return total


def assert_mesh(mesh: Any, *, shape: Sequence[int], names: Sequence[str], name: str = "the mesh") -> None:
    """Fail unless `mesh` is a Mesh over all devices with these axis sizes and names, every axis Explicit."""
    if not isinstance(mesh, jax.sharding.Mesh):
        fail(f"{name} should be a jax.sharding.Mesh, but it is a {type(mesh).__name__}")
    want = dict(zip(names, shape, strict=True))
    if tuple(mesh.axis_names) != tuple(names) or dict(mesh.shape) != want:
        fail(f"{name} has axes {dict(mesh.shape)}, expected {want} (names in that order)")
    devices = list(np.asarray(mesh.devices).flat)
    if sorted(d.id for d in devices) != sorted(d.id for d in jax.devices()):
        fail(f"{name} uses devices {sorted(d.id for d in devices)}, expected each of the "
             f"{jax.device_count()} devices once")
    auto = [n for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True) if t != AxisType.Explicit]
    if auto:
        kinds = ", ".join(getattr(t, "name", str(t)) for t in mesh.axis_types)
        fail(f"{name} has axis types ({kinds}); every axis must be Explicit, so that the sharding is "
             "part of each array's type and a mismatch is an error instead of a silent copy. "
             "`jax.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(shape))` makes one "
             "(a bare `Mesh(devices, names)` is Auto).")
