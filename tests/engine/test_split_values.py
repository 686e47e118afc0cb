"""What crosses between the judge and the executor: meshes, Explicit axes and every device's block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.engine.executor import serve, values
from course.engine.judge import link, proxies
from course.engine.wire import placement, wire
from grading.eight_devices import on_eight_devices


def _to_executor(value: Any) -> Any:
    """`value` as the executor receives it from a judge's call."""
    buffers: list[bytes] = []
    return wire.decode(wire.encode(value, buffers, proxies._sent), buffers, values.incoming)


def _to_judge(value: Any) -> Any:
    """`value` as the judge receives it back from the executor."""
    buffers: list[bytes] = []
    return wire.decode(wire.encode(value, buffers, values.outgoing), buffers, link._returned)


def _blocks(x: jax.Array) -> list[np.ndarray]:
    """Each device's block, in device order."""
    return [np.asarray(s.data) for s in sorted(x.addressable_shards, key=lambda s: s.device.id)]


@on_eight_devices
def test_a_mesh_argument_arrives_with_its_devices_and_explicit_axes() -> None:
    """A learner's function taking a mesh gets the judge's mesh: same devices, names and axis types."""
    mesh = jax.make_mesh((4,), ("stage",), axis_types=(AxisType.Explicit,), devices=jax.devices()[4:])
    got = _to_executor(mesh)
    assert got == mesh
    assert got.axis_types == (AxisType.Explicit,)


@on_eight_devices
def test_a_sharded_array_keeps_its_explicit_sharding_both_ways() -> None:
    """An array placed on an Explicit mesh comes back with the very sharding it had, not an Auto one."""
    mesh = jax.make_mesh((8,), ("tp",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), NamedSharding(mesh, P("tp")))
    there = _to_executor(x)
    back = _to_judge(there)
    for got in (there, back):
        assert got.sharding == x.sharding
        np.testing.assert_array_equal(np.asarray(got), np.asarray(x))


@on_eight_devices
def test_copies_of_a_replicated_result_that_differ_still_differ_in_the_judge() -> None:
    """A result that claims P() but holds another value on each device is seen as such by the judge."""
    mesh = jax.make_mesh((8,), ("tp",), axis_types=(AxisType.Explicit,))
    held = [jax.device_put(np.full(3, i, np.float32), d) for i, d in enumerate(mesh.devices.flat)]
    claimed = jax.make_array_from_single_device_arrays((3,), NamedSharding(mesh, P()), held)
    back = _to_judge(claimed)
    assert [float(b[0]) for b in _blocks(back)] == list(range(8))


@on_eight_devices
def test_blocks_that_do_not_fit_the_sharding_are_refused() -> None:
    """A forged message whose blocks disagree with the sharding it names is no value."""
    mesh = jax.make_mesh((8,), ("tp",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(np.zeros((8, 2), np.float32), NamedSharding(mesh, P("tp")))
    node = placement.array_leaf(x)
    node["global"] = [16, 2]
    with pytest.raises(wire.WireError):
        placement.array_from(node.pop("data"), node)


def test_a_scalar_result_stays_a_scalar() -> None:
    """A 0-d loss comes back 0-d, as a jax.Array, and a NumPy scalar as a NumPy scalar."""
    loss, count = _to_judge((jax.numpy.ones((), np.float32), np.int32(7)))
    assert isinstance(loss, jax.Array) and loss.shape == () and loss.dtype == np.float32
    assert isinstance(count, np.int32) and count == 7


def test_a_jitted_call_keeps_a_python_number_static_there_and_here() -> None:
    """`call_jitted` runs the learner's function under `jax.jit` with the number static, in the executor as here."""
    import types

    from course.grading.observe.calls.programs import call_jitted

    def grow(x: jax.Array, n: int) -> jax.Array:
        """x tiled n times under jit (a traced n could give no shape), x itself when run eagerly."""
        return jax.numpy.tile(x, n) if isinstance(x, jax.core.Tracer) else x

    module = types.ModuleType("learner")
    module.grow = grow
    executor = serve.Executor(None, Path("learner.py"), None)  # type: ignore[arg-type]
    executor.module = module
    buffers: list[bytes] = []
    args = wire.encode([jax.numpy.ones(2, np.float32), 3], buffers, proxies._sent)
    reply, out = executor.answer({"op": "call", "name": "grow", "args": args,
                                  "kwargs": wire.encode({}, buffers, proxies._sent), "jit": True}, buffers)
    assert reply["ok"], reply
    there = wire.decode(reply["value"], out, link._returned)
    here = call_jitted(grow, jax.numpy.ones(2, np.float32), 3)
    np.testing.assert_array_equal(np.asarray(there), np.ones(6, np.float32))
    np.testing.assert_array_equal(np.asarray(here), np.ones(6, np.float32))
