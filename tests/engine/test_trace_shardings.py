"""Every field of JAX's sharding objects, devices and random keys crosses from executor to judge, in a trace and as
an array's placement: a spec's unreduced and reduced axes, an unconstrained dimension, memory kinds, a mesh's axis
types, abstract device and devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AbstractMesh, AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from course.engine.wire import wire
from course.engine.wire.jaxpr_objects import Unsent, decode
from course.engine.wire.jaxprs import encode
from course.grading.observe.traces.jaxprs import equations

TP = AbstractMesh((8,), ("tp",), axis_types=(AxisType.Explicit,))
"""An abstract mesh of 8, as the tensor-parallel exercise's (this process has one device)."""
ONE = jax.make_mesh((1,), ("d",), axis_types=(AxisType.Explicit,))
ONE_AUTO = jax.make_mesh((1,), ("d",), axis_types=(AxisType.Auto,))


def _typed(mesh: Any, shape: tuple[int, ...], spec: P) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))


def _unreduced_mlp(x: jax.Array, w: jax.Array, mesh: Any) -> jax.Array:
    """The second matmul of a tensor-parallel MLP typed unreduced over 'tp', then one reshard (its all-reduce)."""
    partial = jnp.einsum("bf,fd->bd", x, w, out_sharding=NamedSharding(mesh, P(None, None, unreduced={"tp"})))
    return jax.sharding.reshard(partial, NamedSharding(mesh, P()))


def _in_tp(make: Callable[[], Any]) -> Callable[[], Any]:
    """`make` traced under the abstract mesh of 8."""
    def traced() -> Any:
        with jax.sharding.use_abstract_mesh(TP):
            return make()

    return traced


TRACES: dict[str, Callable[[], Any]] = {
    "an unreduced intermediate": _in_tp(lambda: jax.make_jaxpr(_unreduced_mlp, static_argnums=2)(
        _typed(TP, (4, 16), P(None, "tp")), _typed(TP, (16, 8), P("tp", None)), TP)),
    "a reduced spec": _in_tp(lambda: jax.make_jaxpr(
        lambda x: jax.sharding.reshard(x, NamedSharding(TP, P(None, reduced={"tp"}))))(_typed(TP, (4, 8), P()))),
    "an unconstrained dimension": lambda: jax.make_jaxpr(lambda x: jax.lax.with_sharding_constraint(
        x * 2, NamedSharding(ONE_AUTO, P(P.UNCONSTRAINED, None))))(jnp.ones((4, 4))),
    "a shard_map over a concrete mesh": lambda: jax.jit(jax.shard_map(
        lambda b: jax.lax.psum(b, "d"), mesh=ONE, in_specs=P("d"), out_specs=P())).trace(
        jax.device_put(jnp.ones(4), NamedSharding(ONE, P("d")))).jaxpr,
    "a shard_map over an abstract mesh": _in_tp(lambda: jax.make_jaxpr(jax.shard_map(
        lambda b: jax.lax.psum(b, "tp"), mesh=TP, in_specs=P("tp"), out_specs=P()))(_typed(TP, (8, 4), P("tp")))),
    "device_put to a device, a sharding and host memory": lambda: jax.make_jaxpr(
        lambda x: (jax.device_put(x, jax.devices()[0]), jax.device_put(x, NamedSharding(ONE, P())),
                   jax.device_put(x, NamedSharding(ONE, P(), memory_kind="pinned_host"))))(jnp.ones(4)),
    "random keys, typed and raw": lambda: jax.make_jaxpr(
        lambda k, r, x: x * jax.random.normal(k, x.shape) + jax.random.uniform(r, x.shape))(
        jax.random.key(0), jax.random.PRNGKey(1), jnp.ones(3)),
}

_JAXS = (NamedSharding, jax.sharding.SingleDeviceSharding, P, Mesh, AbstractMesh, jax.Device)


@pytest.mark.parametrize("name", list(TRACES))
def test_a_sharded_trace_reads_back_as_it_was_made(name: str) -> None:
    """It prints as the original does, and every sharding, spec, mesh and device in it is JAX's own object again."""
    closed = TRACES[name]()
    back = decode(encode(closed))
    assert str(back) == str(closed)
    params = [v for e in equations(back.jaxpr) for v in jax.tree_util.tree_leaves(
        dict(e.params), is_leaf=lambda v: isinstance(v, _JAXS))]
    assert not [v for v in params if isinstance(v, Unsent) and v.debug_info is None], params
    original = [v for e in equations(closed.jaxpr) for v in jax.tree_util.tree_leaves(
        dict(e.params), is_leaf=lambda v: isinstance(v, _JAXS))]
    assert [type(v) for v in params if isinstance(v, _JAXS)] == [type(v) for v in original if isinstance(v, _JAXS)]


def test_an_unreduced_spec_keeps_its_axes() -> None:
    """The unreduced intermediate's type and the spec of its sharding say 'tp', as they did in the executor."""
    back = decode(encode(TRACES["an unreduced intermediate"]()))
    (dot,) = [e for e in back.jaxpr.eqns if e.primitive.name == "dot_general"]
    spec = dot.outvars[0].aval.sharding.spec
    assert spec.unreduced == frozenset({"tp"}) and spec.partitions == (None, None) and not spec.reduced
    assert dot.params["out_sharding"].spec is spec  # interned: the same object JAX makes


def test_a_concrete_mesh_comes_back_with_its_devices_and_an_abstract_one_with_its_kind() -> None:
    """A shard_map's concrete mesh is a `Mesh` of the same devices; an abstract mesh keeps its device kind."""
    back = decode(encode(TRACES["a shard_map over a concrete mesh"]()))
    (smap,) = [e for e in equations(back.jaxpr) if e.primitive.name == "shard_map"]
    assert isinstance(smap.params["mesh"], Mesh) and smap.params["mesh"].devices.tolist() == ONE.devices.tolist()
    abstract = ONE.abstract_mesh  # the kind of device it is of: CPU
    again = decode(encode(jax.make_jaxpr(
        lambda x: jax.lax.with_sharding_constraint(x, NamedSharding(abstract, P())))(jnp.ones(2))))
    (constraint,) = [e for e in again.jaxpr.eqns if e.primitive.name == "sharding_constraint"]
    mesh = constraint.params["sharding"].mesh
    assert isinstance(mesh, AbstractMesh) and mesh.abstract_device == abstract.abstract_device is not None


FORGED = {
    "a spec of an axis that is no name": {"@": "ps", "v": [None], "u": [7], "r": []},
    "a spec both unreduced and partitioned over one axis": {"@": "ps", "v": ["tp"], "u": ["tp"], "r": []},
    "a mesh whose devices do not fill it": {"@": "mesh", "sizes": [2], "names": ["d"],
                                            "types": [{"@": "enum", "c": "AxisType", "v": "Auto"}], "ad": None,
                                            "ids": [0]},
    "an abstract device that is none": {"@": "mesh", "sizes": [2], "names": ["d"],
                                        "types": [{"@": "enum", "c": "AxisType", "v": "Auto"}], "ad": [1, 2, 3]},
    "a device that is no number": {"@": "dev", "id": "0", "r": "CpuDevice(id=0)"},
    "a random generator this JAX lacks": {"@": "prng", "v": "made_up"},
}


@pytest.mark.parametrize("name", list(FORGED))
def test_a_forged_sharding_is_refused(name: str) -> None:
    """A sharding, mesh, device or generator the executor made up is a WireError, never an object built from it."""
    blob = encode(jax.make_jaxpr(lambda x: x * 2)(1.0))
    size = int.from_bytes(blob[8:16], "big")
    doc = json.loads(blob[16:16 + size])
    doc["jaxprs"][0]["e"][0]["a"]["extra"] = FORGED[name]
    text = json.dumps(doc).encode()
    with pytest.raises(wire.WireError):
        decode(blob[:8] + len(text).to_bytes(8, "big") + text + blob[16 + size:])


PLACED = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from course.engine.wire.placement import array_from, array_leaf

    mesh = jax.make_mesh((8,), ("tp",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(np.arange(64, dtype=np.float32).reshape(4, 16), NamedSharding(mesh, P(None, "tp")))
    w = jax.device_put(np.ones((16, 8), np.float32), NamedSharding(mesh, P("tp", None)))
    unreduced = jax.jit(lambda x, w: jnp.einsum("bf,fd->bd", x, w,
                        out_sharding=NamedSharding(mesh, P(None, None, unreduced={"tp"}))))(x, w)
    offloaded = jax.device_put(np.arange(8, dtype=np.float32), NamedSharding(mesh, P("tp"), memory_kind="pinned_host"))
    seen = {}
    for name, array in (("unreduced", unreduced), ("offloaded", offloaded)):
        leaf = array_leaf(array)
        back = array_from(leaf["data"], leaf)
        seen[name] = [back.sharding == array.sharding, str(back.sharding.spec),
                      all(np.array_equal(np.asarray(a.data), np.asarray(b.data))
                          for a, b in zip(array.addressable_shards, back.addressable_shards))]
    print(json.dumps(seen))
""")


@pytest.mark.slow
def test_an_arrays_placement_crosses_whole() -> None:
    """An array typed unreduced over an axis, and one in host memory, come back with the same sharding (spec,
    unreduced axes, memory kind) and every device's block."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", PLACED], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"unreduced": [True, "P(None, None, unreduced={'tp'})", True],
                    "offloaded": [True, "P('tp',)", True]}, seen
