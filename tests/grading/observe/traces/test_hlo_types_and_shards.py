"""Tests of the helpers Part 6's graders share: HLO collectives with their result types (tuples split),
jaxpr collectives' dtypes and total sizes, each device's block compared, and one trace-lower-compile per case."""

from __future__ import annotations

import inspect
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from eight_devices import on_eight_devices
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import CheckFailed
from course.grading.observe.traces.collectives import (
    BlockFault,
    collectives_in,
    hlo_collective_shapes,
    jaxpr_collectives,
    live_jaxpr,
    wrong_blocks,
)
from course.grading.observe.traces.sharding import shard_mismatches, traced_once

HERE = Path(__file__).resolve()


def _mesh() -> jax.sharding.Mesh:
    """A 1-D Explicit mesh of 8 devices named 'd'."""
    return jax.make_mesh((8,), ("d",), axis_types=(AxisType.Explicit,))


def test_tuple_all_reduce_is_split_into_elements() -> None:
    """A combined all-reduce of a scalar and two matrices is three arrays; names, layouts and comments are not."""
    text = ("  %all-reduce.5 = (f32[], f32[40]{0}, /*index=2*/bf16[40,24]{1,0}) all-reduce(%a, %b, %c), "
            "channel_id=5, to_apply=%add\n"
            "  %ag = f32[24,40]{1,0} all-gather(%all-reduce.5), dimensions={0}\n"
            "  ROOT %rs.2 = f32[3,40]{1,0} reduce-scatter(%x), dimensions={0}\n"
            "  %cps = (f32[4]{0}, f32[4]{0}) collective-permute-start(%y)\n"
            "  %cpd = f32[4]{0} collective-permute-done(%cps)\n")
    found = [(c.op, c.dtype, c.shape, c.name, c.index) for c in hlo_collective_shapes(text)]
    assert found == [
        ("all-reduce", "f32", (), "%all-reduce.5", 0),
        ("all-reduce", "f32", (40,), "%all-reduce.5", 1),
        ("all-reduce", "bf16", (40, 24), "%all-reduce.5", 2),
        ("all-gather", "f32", (24, 40), "%ag", None),
        ("reduce-scatter", "f32", (3, 40), "%rs.2", None),
        ("collective-permute", "f32", (4,), "%cpd", None),
    ]
    assert [c.elements for c in hlo_collective_shapes(text)][:3] == [1, 40, 960]
    assert hlo_collective_shapes(text)[2].text() == "bf16[40,24]"


@on_eight_devices
def test_compiled_gathers_and_scatters_have_their_shapes() -> None:
    """A tiled all_gather of (3, 40) blocks compiles to an f32[24,40] all-gather; its gradient to reduce-scatters."""
    mesh = _mesh()
    rows = NamedSharding(mesh, P("d"))
    w = jax.device_put(np.ones((24, 40), np.float32), rows)
    x = jax.device_put(np.ones((8, 24), np.float32), rows)
    body = lambda w, x: lax.psum(jnp.sum((x @ lax.all_gather(w, "d", tiled=True)) ** 2), "d")  # noqa: E731
    loss = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P())
    forward = hlo_collective_shapes(jax.jit(loss).lower(w, x).compile())
    assert [(c.op, c.dtype, c.shape) for c in forward] == [("all-gather", "f32", (24, 40)), ("all-reduce", "f32", ())]
    backward = hlo_collective_shapes(jax.jit(jax.grad(loss)).lower(w, x).compile())
    assert [(c.op, c.shape) for c in backward] == [("all-gather", (24, 40)), ("reduce-scatter", (3, 40))]


@on_eight_devices
def test_jaxpr_collectives_carry_dtypes_and_totals() -> None:
    """A bfloat16 psum inside a scan of 3 is found with its dtype, and moves 3 times its size in all."""
    mesh = _mesh()
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh, P("d")))

    def body(b):
        """Three psums of the block cast to bfloat16, in a scan."""
        step = lambda c, _: (c + lax.psum(b.astype(jnp.bfloat16), "d").astype(jnp.float32), None)  # noqa: E731
        return lax.scan(step, jnp.zeros_like(b), length=3)[0]

    (found,) = collectives_in(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d")), x)
    assert (found.dtypes, found.shapes, found.times, found.total_elements) == (("bfloat16",), ((1, 16),), 3, 48)


@on_eight_devices
def test_shard_mismatches_name_the_devices_that_differ() -> None:
    """A 'replicated' result whose devices hold different values is caught on each device that differs."""
    mesh = _mesh()
    x = jax.device_put(np.arange(8, dtype=np.float32).reshape(8, 1), NamedSharding(mesh, P("d")))
    # check_vma=False lets out_specs=P() claim one value everywhere while each device keeps its own.
    unsummed = jax.jit(jax.shard_map(lambda b: b.sum(), mesh=mesh, in_specs=P("d"), out_specs=P(),
                                     check_vma=False))(x)
    assert float(np.asarray(unsummed)) == 0.0  # reading the array sees device 0's copy only
    bad = shard_mismatches(unsummed, np.float32(0.0))
    assert [m.device for m in bad] == list(range(1, 8))
    assert bad[0].block == "[]" and bad[-1].worst == 7.0
    rows = jax.device_put(np.arange(16, dtype=np.float32).reshape(8, 2), NamedSharding(mesh, P("d")))
    want = np.arange(16, dtype=np.float32).reshape(8, 2)
    want[5, 1] += 1.0
    (one,) = shard_mismatches(rows, want)
    assert (one.device, one.block, one.worst) == (5, "[5:6, :]", 1.0)
    assert not shard_mismatches(rows, np.arange(16).reshape(8, 2))


@on_eight_devices
def test_traced_once_shares_one_compile() -> None:
    """Values, jaxpr and HLO come from one program; a second case of the same program compiles nothing new."""
    mesh = _mesh()
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("d")))
    line = inspect.currentframe().f_lineno + 1  # the next line writes the psum
    fn = lambda a: jax.shard_map(lambda b: lax.psum(b.sum(), "d"), mesh=mesh, in_specs=P("d"), out_specs=P())(a)  # noqa: E731
    case = traced_once(fn, x, name="`fn`", path=HERE)
    assert float(case.out) == 32.0
    (psum,) = collectives_in(fn, x, path=HERE)
    assert psum.line == line
    assert [c.op for c in hlo_collective_shapes(case.hlo)] == ["all-reduce"]
    again = traced_once(lambda a: fn(a), x, name="`fn`")
    assert again.program.compiled is case.program.compiled


@on_eight_devices
def test_traced_once_explains_tracing_mistakes() -> None:
    """A Python number asked of a traced value fails the check with the course's words; other errors pass."""
    mesh = _mesh()
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("d")))
    with pytest.raises(CheckFailed, match="must work under `jax.jit`"):
        traced_once(lambda a: float(a.sum()), x, name="`fn`")
    with pytest.raises(ZeroDivisionError):
        traced_once(lambda a: 1 / 0, x, name="`fn`")


@on_eight_devices
def test_traced_once_explains_an_illegal_sharding() -> None:
    """Explicit mode refusing a result sharded twice over one axis fails the check in the course's words."""
    mesh = _mesh()
    rows = NamedSharding(mesh, P("d"))
    x = jax.device_put(np.ones((16, 8), np.float32), rows)
    b = jax.device_put(np.ones(8, np.float32), rows)
    with pytest.raises(CheckFailed, match=r"shardings do not fit together.*JAX said: add operation with inputs"):
        traced_once(lambda x, b: x + b, x, b, name="`fn`")


@on_eight_devices
def test_traced_once_explains_a_sharded_contraction() -> None:
    """A matmul over a dimension split across devices, with no out_sharding, is named as such."""
    mesh = _mesh()
    a = jax.device_put(np.ones((4, 16), np.float32), NamedSharding(mesh, P(None, "d")))
    b = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(mesh, P("d", None)))
    with pytest.raises(CheckFailed, match=r"multiplies over a dimension that is split across devices"):
        traced_once(lambda a, b: a @ b, a, b, name="`fn`")


@on_eight_devices
def test_wrong_blocks_names_zeros_and_misplaced_blocks() -> None:
    """A result sharded by columns, cut into 8 row blocks: one zeroed, one swapped with another, one perturbed."""
    mesh = _mesh()
    rng = np.random.default_rng(0)
    want = rng.standard_normal((16, 8)).astype(np.float32)
    bad = want.copy()
    bad[0:2, 1] = 0.0  # device 1, row block 0: nothing written
    bad[4:6, 3], bad[6:8, 3] = want[6:8, 3], want[4:6, 3]  # device 3: blocks 2 and 3 swapped
    bad[14:16, 6] += 1.0  # device 6, row block 7: other values
    got = jax.device_put(bad, NamedSharding(mesh, P(None, "d")))
    expected = lambda index: np.split(want[:, index[1]], 8)  # noqa: E731
    assert wrong_blocks(got, expected) == [
        BlockFault(device=1, block=0, zeros=True, holds=None),
        BlockFault(device=3, block=2, zeros=False, holds=3),
        BlockFault(device=3, block=3, zeros=False, holds=2),
        BlockFault(device=6, block=7, zeros=False, holds=None),
    ]
    assert wrong_blocks(jax.device_put(want, NamedSharding(mesh, P(None, "d"))), expected) == []
    rows = want.T.copy()  # (8, 16) by rows: each device's row cut into 8 column blocks of 2
    rows[5, 2:4] = 0.0
    faults = wrong_blocks(jax.device_put(rows, NamedSharding(mesh, P("d"))),
                          lambda index: np.split(want.T[index], 8, axis=1), axis=1)
    assert faults == [BlockFault(device=5, block=1, zeros=True, holds=None)]


@on_eight_devices
def test_live_jaxpr_drops_a_shift_nothing_reads_as_xla_does() -> None:
    """Unrolled, a last unused ppermute is dead, in the jaxpr as in the HLO; in a loop it is a carry and stays."""
    mesh = _mesh()
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("d")))
    right = [(i, (i + 1) % 8) for i in range(8)]

    def unrolled(b):
        total = b
        for _ in range(3):
            b = lax.ppermute(b, "d", right)
            total = total + b
        lax.ppermute(b, "d", right)  # its result is never used
        return total

    def looped(b):
        return lax.fori_loop(0, 3, lambda i, c: (lax.ppermute(c[0], "d", right), c[1] + c[0]), (b, b))[1]

    for body, traced, live in ((unrolled, 4, 3), (looped, 3, 3)):
        fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
        jaxpr = fn.trace(x).jaxpr
        steps = lambda j: sum(c.times for c in jaxpr_collectives(j) if c.primitive == "ppermute")  # noqa: E731
        assert (steps(jaxpr), steps(live_jaxpr(jaxpr))) == (traced, live)
    compiled = jax.jit(jax.shard_map(unrolled, mesh=mesh, in_specs=P("d"), out_specs=P("d"))).lower(x).compile()
    assert [c.op for c in hlo_collective_shapes(compiled)] == ["collective-permute"] * 3  # XLA drops it too


@on_eight_devices
def test_traced_once_explains_a_slice_of_a_sharded_dimension() -> None:
    """Taking one device's row out of a P('d') array outside a shard_map is named as a slice of a split axis."""
    mesh = _mesh()
    x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("d")))
    with pytest.raises(CheckFailed, match=r"slices an array along a dimension that is split.*JAX said: slicing on"):
        traced_once(lambda a: a[7], x, name="`fn`")
