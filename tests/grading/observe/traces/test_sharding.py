"""Tests of `observe.traces.sharding` on 8 CPU devices: `P(...)` text, equivalence, meshes, shard bytes."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import numpy as np
import pytest
from eight_devices import on_eight_devices
from jax import lax
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import CheckFailed
from course.grading.observe.traces.sharding import (
    assert_mesh,
    assert_sharding,
    call_traced,
    differing_copies,
    per_device_bytes,
    shard_shapes,
    sharding_text,
    spec_text,
)


def _mesh() -> Mesh:
    """The 2x4 Explicit mesh the distributed exercises use."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def _placed(shape: tuple[int, ...], spec: P, mesh: Mesh | None = None) -> jax.Array:
    """A float32 array of `shape`, laid out as `spec` on `mesh`."""
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return jax.device_put(data, NamedSharding(mesh or _mesh(), spec))


def test_spec_text_is_code() -> None:
    """Specs print as a learner writes them, tuples of axes and trailing None included."""
    assert spec_text(P("x", "y")) == "P('x', 'y')"
    assert spec_text(P()) == "P()"
    assert spec_text(P("y", None)) == "P('y', None)"
    assert spec_text(P(("x", "y"), None)) == "P(('x', 'y'), None)"
    assert spec_text(P(("x",))) == "P('x')"  # JAX itself folds a one-axis tuple


def test_sharding_text_of_a_single_device_array() -> None:
    """An array that was never placed on a mesh is described as living on one device."""
    assert sharding_text(jax.device_put(np.ones(3, np.float32))).startswith("one device only (")


@on_eight_devices
def test_assert_sharding_compares_by_equivalence() -> None:
    """`P('x')` and `P('x', None)` are one layout, and an Auto mesh over the same devices is the same too."""
    mesh = _mesh()
    x = _placed((8, 8), P("x"), mesh)
    assert_sharding(x, NamedSharding(mesh, P("x", None)), name="x")
    auto = Mesh(np.asarray(mesh.devices), ("x", "y"))
    assert NamedSharding(auto, P("x")) != x.sharding  # `==` would call these different
    assert_sharding(x, NamedSharding(auto, P("x")), name="x")


@on_eight_devices
def test_assert_sharding_names_both_layouts() -> None:
    """A row-only layout against `P('x', 'y')` fails, printing both specs and the mesh."""
    mesh = _mesh()
    x = _placed((8, 8), P("x"), mesh)
    with pytest.raises(CheckFailed) as caught:
        assert_sharding(x, NamedSharding(mesh, P("x", "y")), name="`place(x, mesh)`", hint="Shard columns too.")
    assert str(caught.value) == ("`place(x, mesh)` is sharded P('x'), expected P('x', 'y') on the mesh "
                                 "{'x': 2, 'y': 4}. Shard columns too.")
    with pytest.raises(CheckFailed, match="sharded one device only"):
        assert_sharding(jax.device_put(np.ones((8, 8), np.float32)), NamedSharding(mesh, P("x", "y")), name="x")


@on_eight_devices
def test_shard_shapes_and_per_device_bytes() -> None:
    """Each device of a 2x4 mesh holds one (R/2, C/4) block; the bytes of one device's shards add up."""
    mesh = _mesh()
    assert shard_shapes(_placed((8, 16), P("x", "y"), mesh)) == [(4, 4)] * 8
    assert shard_shapes(_placed((8, 16), P(), mesh)) == [(8, 16)] * 8
    params = {
        "w1": _placed((16, 32), P("x", "y"), mesh),   # 8 x 8 floats per device: 256 bytes
        "b1": _placed((32,), P("y"), mesh),           # 8 floats: 32 bytes
        "w2": _placed((32, 8), P("y", None), mesh),   # 8 x 8 floats: 256 bytes
        "scale": _placed((), P(), mesh),              # replicated scalar: 4 bytes
    }
    assert per_device_bytes(params) == 548
    spec = jax.ShapeDtypeStruct((16, 32), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
    assert per_device_bytes([spec]) == 256


@on_eight_devices
def test_assert_mesh_accepts_the_explicit_mesh() -> None:
    """`jax.make_mesh` with Explicit axes over all 8 devices passes."""
    assert_mesh(_mesh(), shape=(2, 4), names=("x", "y"))


@on_eight_devices
def test_assert_mesh_refuses_auto_axes() -> None:
    """A bare `Mesh(devices, names)` has Auto axes, and the message says how to make Explicit ones."""
    auto = Mesh(np.asarray(jax.devices()).reshape(2, 4), ("x", "y"))
    with pytest.raises(CheckFailed, match=r"axis types \(Auto, Auto\); every axis must be Explicit"):
        assert_mesh(auto, shape=(2, 4), names=("x", "y"))


@on_eight_devices
def test_assert_mesh_refuses_wrong_shape_names_and_devices() -> None:
    """Swapped sizes, other names, a subset of the devices, or no mesh at all each fail with their reason."""
    explicit = (AxisType.Explicit,) * 2
    with pytest.raises(CheckFailed, match=r"has axes \{'x': 4, 'y': 2\}, expected \{'x': 2, 'y': 4\}"):
        assert_mesh(jax.make_mesh((4, 2), ("x", "y"), axis_types=explicit), shape=(2, 4), names=("x", "y"))
    with pytest.raises(CheckFailed, match="names in that order"):
        assert_mesh(jax.make_mesh((2, 4), ("y", "x"), axis_types=explicit), shape=(2, 4), names=("x", "y"))
    half = Mesh(np.asarray(jax.devices()[:4]).reshape(2, 2), ("x", "y"), axis_types=explicit)
    with pytest.raises(CheckFailed, match=r"uses devices \[0, 1, 2, 3\], expected each of the 8 devices"):
        assert_mesh(half, shape=(2, 2), names=("x", "y"))
    with pytest.raises(CheckFailed, match="should be a jax.sharding.Mesh, but it is a tuple"):
        assert_mesh((2, 4), shape=(2, 4), names=("x", "y"))


HERE = Path(__file__).resolve()


@on_eight_devices
def test_call_traced_returns_the_value_or_the_jaxpr() -> None:
    """Under jit the result comes back as an array; with `jaxpr=True`, as the traced program."""
    mesh = _mesh()
    x = _placed((8, 8), P("x", "y"), mesh)
    total = lambda a: jax.shard_map(lambda b: lax.psum(b.sum(), ("x", "y")), mesh=mesh,  # noqa: E731
                                    in_specs=P("x", "y"), out_specs=P())(a)
    assert float(call_traced(total, x, name="`total`")) == float(np.arange(64).sum())
    assert "shard_map" in str(call_traced(total, x, name="`total`", jaxpr=True))


@on_eight_devices
def test_call_traced_explains_the_usual_tracing_mistakes() -> None:
    """A Python float, `jax.set_mesh` inside, a partial psum under out_specs=P(), and refused in_specs."""
    mesh = _mesh()
    x = _placed((8, 8), P("x", "y"), mesh)

    def as_float(a):
        """Asks a traced value for a number."""
        return float(a.sum())

    def sets_mesh(a):
        """Sets the mesh inside a traced function."""
        with jax.set_mesh(mesh):
            return a.sum()

    partial = lambda a: jax.shard_map(lambda b: lax.psum(b.sum(), "y"), mesh=mesh,  # noqa: E731
                                      in_specs=P("x", "y"), out_specs=P())(a)
    rows = lambda a: jax.shard_map(lambda b: lax.psum(b.sum(), ("x", "y")), mesh=mesh,  # noqa: E731
                                   in_specs=P("x"), out_specs=P())(a)
    cases = [(as_float, r"must work under `jax.jit`.* at test_sharding.py line \d+: `return float\(a.sum\(\)\)`"),
             (sets_mesh, r"calls `jax.set_mesh` at test_sharding.py line \d+"),
             (partial, r"claims with its `out_specs` that a result is the same on every device"),
             (rows, r"`in_specs` that differ from how its argument is sharded.*P\('x', None\)")]
    for fn, pattern in cases:
        for jaxpr in (False, True):
            with pytest.raises(CheckFailed, match=pattern):
                call_traced(fn, x, name="`f`", path=HERE, jaxpr=jaxpr)


@on_eight_devices
def test_a_bare_spec_outside_a_mesh_is_not_blamed_on_set_mesh() -> None:
    """A PartitionSpec given where no mesh is set: JAX's advice names `jax.set_mesh`, which the code never called,
    so the message names the bare spec and never says the code calls `jax.set_mesh`."""
    mesh = _mesh()
    x = _placed((8, 8), P("x", "y"), mesh)
    resharded = lambda a: jax.sharding.reshard(a, P())  # noqa: E731
    constrained = lambda a: jax.lax.with_sharding_constraint(a, P())  # noqa: E731
    for fn, spec in ((resharded, r"the bare spec `P\(\)`"), (constrained, r"a bare PartitionSpec")):
        for jaxpr in (False, True):
            with pytest.raises(CheckFailed) as caught:
                call_traced(fn, x, name="`f`", path=HERE, jaxpr=jaxpr)
            message = str(caught.value)
            assert re.search(spec + r" while no mesh is set at test_sharding.py line \d+", message), message
            assert "calls `jax.set_mesh`" not in message and "NamedSharding(mesh, spec)" in message, message


def test_call_traced_lets_other_errors_through() -> None:
    """An error the course has no words for reaches the platform unchanged."""

    def broken(a):
        """Raises its own ValueError."""
        raise ValueError("a bug of the learner's own")

    with pytest.raises(ValueError, match="a bug of the learner's own"):
        call_traced(broken, np.ones(3, np.float32), name="`broken`")

    def stops(a):
        """Raises a RuntimeError the course has no words for."""
        raise RuntimeError("a runtime failure of the learner's own")

    with pytest.raises(RuntimeError, match="a runtime failure of the learner's own"):
        call_traced(stops, np.ones(3, np.float32), name="`stops`")


@on_eight_devices
def test_differing_copies_compares_every_device() -> None:
    """A result claimed replicated by `check_vma=False` whose devices computed different values is caught."""
    mesh = _mesh()
    x = _placed((8, 8), P("x", "y"), mesh)
    run = lambda body: jax.jit(lambda a: jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),  # noqa: E731
                                                       out_specs=P(), check_vma=False)(a))(x)
    assert differing_copies(run(lambda b: lax.psum(b.sum(), ("x", "y")))) == ""
    assert differing_copies(x) == ""  # each block held once: nothing to compare
    told = differing_copies(run(lambda b: lax.psum(b.sum(), "x")))
    assert told.startswith("devices 0, 4 hold ") and told.count("hold") == 4


@on_eight_devices
def test_call_traced_names_an_axis_the_mesh_lacks() -> None:
    """A name written into the code, in specs, a collective, `axis_index` or `mesh.shape`, is named."""
    mesh = jax.make_mesh((8,), ("peers",), axis_types=(AxisType.Explicit,))
    x = _placed((8, 8), P("peers"), mesh)
    spec = lambda a: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("ring"), out_specs=P("ring"))(a)  # noqa: E731
    inside = lambda a: jax.shard_map(lambda b: lax.psum(b, "ring"), mesh=mesh,  # noqa: E731
                                     in_specs=P("peers"), out_specs=P("peers"))(a)
    index = lambda a: jax.shard_map(lambda b: b + lax.axis_index("ring"), mesh=mesh,  # noqa: E731
                                    in_specs=P("peers"), out_specs=P("peers"))(a)
    size = lambda a: a * mesh.shape["ring"]  # noqa: E731
    for fn in (spec, inside, index, size):
        with pytest.raises(CheckFailed, match=r"names the mesh axis 'ring', but the mesh it is given has the "
                                              r"axes \('peers',\)"):
            call_traced(fn, x, name="`f`", path=HERE, jaxpr=True)
