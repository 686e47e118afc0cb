"""JAX arrays, meshes and shardings as plain data, and back: what the link between judge and executor carries.

A jax.Array crosses as its data and, when it is sharded over several devices, as every device's
block with its mesh and spec, so the other side rebuilds the same placement (checks compare the
blocks, and copies of a replicated block may differ). Either side may have been sent a forgery:
every description is checked as it is read, and a malformed one is a `wire.WireError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course.engine.wire import wire

__all__ = ["array_from", "array_leaf", "describe_mesh", "describe_sharding", "mesh_from", "sharding_from"]


def array_leaf(value: Any) -> dict[str, Any]:
    """A jax.Array as sent: sharded over several devices, every device's block (copies of a replicated
    block may differ, and checks compare them); else its data."""
    sharding = describe_sharding(value)
    if sharding is not None:
        blocks = [np.asarray(s.data) for s in sorted(value.addressable_shards, key=lambda s: s.device.id)]
        if len({b.shape for b in blocks}) == 1:
            return {"data": np.stack(blocks), "kind": "jax", "sharding": sharding, "global": list(value.shape)}
    return {"data": np.asarray(value), "kind": "jax", "sharding": sharding}


def array_from(data: np.ndarray, node: dict[str, Any]) -> Any:
    """The jax.Array `array_leaf` sent: its data placed by its sharding, or its blocks each on its device."""
    import jax

    sharding = sharding_from(node.get("sharding"))
    shape = node.get("global")
    if shape is None or sharding is None:
        return jax.device_put(data, sharding)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise wire.WireError("an array's shape is not one")
    devices = sorted(sharding.addressable_devices, key=lambda d: d.id)
    try:
        block = sharding.shard_shape(tuple(shape))
    except ValueError as exc:
        raise wire.WireError(f"an array's blocks do not fit its sharding: {exc}") from None
    if data.shape != (len(devices), *block):
        raise wire.WireError("an array's blocks do not fit its sharding")
    kind = sharding.memory_kind  # each block in the memory its array was in (a host-offloaded array's, say)
    placed = [jax.device_put(b, jax.sharding.SingleDeviceSharding(d, memory_kind=kind))
              for b, d in zip(data, devices, strict=True)]
    try:
        return jax.make_array_from_single_device_arrays(tuple(shape), sharding, placed)
    except ValueError as exc:
        raise wire.WireError(f"an array's blocks do not fit its sharding: {exc}") from None


def describe_mesh(mesh: Any) -> dict[str, Any]:
    """A Mesh as plain data: its devices' ids, its axes and their types."""
    return {"shape": list(mesh.devices.shape), "ids": [int(d.id) for d in mesh.devices.flat],
            "axes": [str(a) for a in mesh.axis_names], "types": [t.name for t in mesh.axis_types]}


def mesh_from(data: Any) -> Any:
    """The Mesh `describe_mesh` described (checked, since either side may send it)."""
    import jax
    from jax.sharding import AxisType, Mesh

    try:
        by_id = {d.id: d for d in jax.devices()}
        devices = np.array([by_id[int(i)] for i in data["ids"]], dtype=object).reshape(data["shape"])
        types = tuple(AxisType.__members__[str(t)] for t in data["types"])
        return Mesh(devices, tuple(str(a) for a in data["axes"]), axis_types=types)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"a mesh is malformed: {exc}") from None


def describe_sharding(array: Any) -> dict[str, Any] | None:
    """A NamedSharding as plain data (its mesh, as `describe_mesh`, its spec with the axes it is unreduced and
    reduced over, and its memory kind), else None. A spec's parts are read through `partitions`: iterating a
    spec that is unreduced or reduced over an axis raises."""
    from jax.sharding import NamedSharding

    sharding = array.sharding
    if not isinstance(sharding, NamedSharding) or len(sharding.mesh.devices.flat) <= 1:
        return None
    spec = sharding.spec
    parts = [list(p) if isinstance(p, tuple) else p for p in spec.partitions]
    return {**describe_mesh(sharding.mesh), "spec": parts, "unreduced": sorted(map(str, spec.unreduced)),
            "reduced": sorted(map(str, spec.reduced)), "memory_kind": sharding.memory_kind}


def sharding_from(data: Any) -> Any:
    """The NamedSharding `describe_sharding` described (checked, since either side may send it), or None."""
    if data is None:
        return None
    from jax.sharding import NamedSharding, PartitionSpec

    try:
        parts = [tuple(p) if isinstance(p, list) else p for p in data["spec"]]
        axes = {k: frozenset(_names(data.get(k, []))) for k in ("unreduced", "reduced")}
        kind = data.get("memory_kind")
        if not (kind is None or isinstance(kind, str)):
            raise TypeError("a memory kind is not one")
        return NamedSharding(mesh_from(data), PartitionSpec(*parts, **axes), memory_kind=kind)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"a sharding is malformed: {exc}") from None


def _names(value: Any) -> list[str]:
    """A list of axis names; TypeError for anything else."""
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise TypeError("axis names are not a list of names")
    return value
