"""Meshes, shardings, partition specs and devices in a trace: written in the executor, read back in the judge.

Every field JAX gives these objects crosses: a spec's unreduced and reduced axes (read through
`partitions`, since iterating such a spec raises), an unconstrained dimension, a sharding's memory kind
and logical device ids, a mesh's axis types and abstract device, and a concrete mesh's device ids, so
that the judge rebuilds the same concrete `Mesh` where it has those devices (an `AbstractMesh` of the same
axes where it has not). `write` is the writer's half (`course.engine.wire.jaxprs`), `READERS` the reader's
(`course.engine.wire.jaxpr_values`); `w` and `r` are the trace's writer and reader. Malformed is `WireError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course.engine.wire import wire

__all__ = ["READERS", "write"]


def write(w: Any, value: Any, depth: int) -> dict[str, Any] | None:
    """The tagged form of a mesh, sharding, partition spec or device; None for any other value."""
    import jax
    from jax._src import mesh, named_sharding

    if isinstance(value, mesh.Mesh | mesh.AbstractMesh):
        return _mesh(w, value, depth)
    if isinstance(value, jax.sharding.NamedSharding):
        ids = value._logical_device_ids
        return {"@": "ns", "mesh": w.value(value.mesh, depth + 1), "spec": w.value(value.spec, depth + 1),
                "mk": value.memory_kind, "ldi": None if ids is None else [int(i) for i in ids]}
    if isinstance(value, jax.sharding.SingleDeviceSharding):
        (device,) = value.device_set
        return {"@": "sds", "dev": w.value(device, depth + 1), "mk": value.memory_kind}
    if isinstance(value, jax.sharding.PartitionSpec):
        return {"@": "ps", "v": [w.value(p, depth + 1) for p in value.partitions],
                "u": sorted(map(str, value.unreduced)), "r": sorted(map(str, value.reduced))}
    if value is jax.sharding.PartitionSpec.UNCONSTRAINED:
        return {"@": "unc"}
    if value is named_sharding.UNSPECIFIED:
        return {"@": "unspec"}
    if isinstance(value, jax.Device):
        return {"@": "dev", "id": int(value.id), "r": repr(value)[:200]}
    return None


def _mesh(w: Any, value: Any, depth: int) -> dict[str, Any]:
    """A mesh as its axes (sizes, names, types), its abstract device, and a concrete one's device ids."""
    from jax._src import mesh

    concrete = isinstance(value, mesh.Mesh)
    device = (value.abstract_mesh if concrete else value).abstract_device
    node = {"@": "mesh", "sizes": [int(s) for s in value.axis_sizes], "names": [str(n) for n in value.axis_names],
            "types": [w.value(t, depth + 1) for t in value.axis_types],
            "ad": None if device is None else [str(device.device_kind), device.num_cores, str(device.platform)]}
    if concrete:  # the mesh of no axes holds no device: `Mesh(np.empty((), dtype=object), ())`
        node["ids"] = [int(d.id) for d in value.devices.flat] if value.axis_names else []
    return node


def _read_mesh(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A mesh: the concrete one its device ids name where this process has them all, else its abstract twin."""
    from jax._src import mesh

    sizes, names, types, ids = node.get("sizes"), node.get("names"), _seq(r, node, depth, "types"), node.get("ids")
    if not (isinstance(sizes, list) and all(type(s) is int and s > 0 for s in sizes) and isinstance(names, list)
            and all(isinstance(n, str) for n in names) and len(sizes) == len(names) == len(types)
            and all(isinstance(t, mesh.AxisType) for t in types)):
        raise wire.WireError("a trace's mesh is malformed")
    if ids == [] and not sizes:
        return mesh.Mesh(np.empty((), dtype=object), ())
    if ids is not None:
        if not (isinstance(ids, list) and all(type(i) is int for i in ids) and len(set(ids)) == len(ids)
                and len(ids) == int(np.prod(sizes, dtype=np.int64))):
            raise wire.WireError("a trace's mesh names its devices wrongly")
        devices = _devices(ids)
        if devices is not None:
            return mesh.Mesh(np.array(devices, dtype=object).reshape(sizes), tuple(names), axis_types=tuple(types))
    return mesh.AbstractMesh(tuple(sizes), tuple(names), axis_types=tuple(types),
                             abstract_device=_abstract_device(node.get("ad")))


def _seq(r: Any, node: dict[str, Any], depth: int, key: str) -> list[Any]:
    """The values listed under `key`."""
    items = node.get(key)
    if not isinstance(items, list):
        raise wire.WireError("a trace's sequence is malformed")
    return [r.value(v, depth) for v in items]


def _abstract_device(raw: Any) -> Any:
    """The kind of device an abstract mesh is of (None when it names none)."""
    from jax._src import mesh

    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str) and isinstance(raw[2], str)
            and (raw[1] is None or type(raw[1]) is int)):
        raise wire.WireError("a trace's abstract device is malformed")
    return mesh.AbstractDevice(device_kind=raw[0], num_cores=raw[1], platform=raw[2])


def _devices(ids: list[int]) -> list[Any] | None:
    """This process's devices with these ids, in order; None when it lacks any of them."""
    import jax

    by_id = {d.id: d for d in jax.devices()}
    return [by_id[i] for i in ids] if all(i in by_id for i in ids) else None


def _read_named(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A named sharding: its mesh, partition spec, memory kind and logical device ids."""
    import jax

    mesh, spec, kind, ids = r.value(node.get("mesh"), depth), r.value(node.get("spec"), depth), node.get("mk"), \
        node.get("ldi")
    if not isinstance(spec, jax.sharding.PartitionSpec) or not (kind is None or isinstance(kind, str)) \
            or not (ids is None or isinstance(ids, list) and all(type(i) is int for i in ids)):
        raise wire.WireError("a trace's sharding is malformed")
    try:
        return jax.sharding.NamedSharding(mesh, spec, memory_kind=kind,
                                          _logical_device_ids=None if ids is None else tuple(ids))
    except (TypeError, ValueError):
        raise wire.WireError("a trace's sharding is not one") from None


def _read_single(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A single device's sharding, where this process has that device (else it stays text)."""
    import jax

    device, kind = r.value(node.get("dev"), depth), node.get("mk")
    if not (kind is None or isinstance(kind, str)):
        raise wire.WireError("a trace's sharding is malformed")
    if not isinstance(device, jax.Device):
        return r.unsent("SingleDeviceSharding", f"SingleDeviceSharding(device={device}, memory_kind={kind})")
    try:
        return jax.sharding.SingleDeviceSharding(device, memory_kind=kind)
    except (TypeError, ValueError):
        raise wire.WireError("a trace's sharding is not one") from None


def _read_spec(r: Any, node: dict[str, Any], depth: int) -> Any:
    """A partition spec: per dimension None, an axis name, a tuple of them or unconstrained; and the axes it is
    unreduced and reduced over."""
    import jax

    P = jax.sharding.PartitionSpec
    parts, unreduced, reduced = _seq(r, node, depth, "v"), node.get("u"), node.get("r")
    names = (unreduced or []) + (reduced or [])
    if not (all(p is None or p is P.UNCONSTRAINED or isinstance(p, str)
                or (isinstance(p, tuple) and all(isinstance(a, str) for a in p)) for p in parts)
            and isinstance(unreduced, list) and isinstance(reduced, list) and all(isinstance(n, str) for n in names)):
        raise wire.WireError("a trace's partition spec is malformed")
    try:
        return P(*parts, unreduced=frozenset(unreduced), reduced=frozenset(reduced))
    except (TypeError, ValueError):
        raise wire.WireError("a trace's partition spec is not one") from None


def _read_device(r: Any, node: dict[str, Any], depth: int) -> Any:
    """The device with this id, where this process has it; else its text."""
    ident, text = node.get("id"), node.get("r")
    if type(ident) is not int or not isinstance(text, str):
        raise wire.WireError("a trace's device is malformed")
    found = _devices([ident])
    return found[0] if found is not None else r.unsent("Device", text[:200])


def _constant(name: str) -> Any:
    """A reader of one of JAX's singletons: the unconstrained dimension, the unspecified sharding."""
    def read(r: Any, node: dict[str, Any], depth: int) -> Any:
        import jax
        from jax._src import named_sharding

        return jax.sharding.PartitionSpec.UNCONSTRAINED if name == "unc" else named_sharding.UNSPECIFIED

    return read


READERS = {"mesh": _read_mesh, "ns": _read_named, "sds": _read_single, "ps": _read_spec, "dev": _read_device,
           "unc": _constant("unc"), "unspec": _constant("unspec")}
"""The reader of each tag `write` gives."""
