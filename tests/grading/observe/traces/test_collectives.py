"""Tests of `observe.traces.collectives` on 8 CPU devices: HLO collectives, jaxpr collectives and their counts."""

from __future__ import annotations

import inspect
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from eight_devices import on_eight_devices
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading.observe.traces.collectives import (
    by_call,
    collectives_in,
    compiled_hlo,
    hlo_collectives,
    total_steps,
)

HERE = Path(__file__).resolve()
RIGHT = [(i, (i + 1) % 8) for i in range(8)]


def _grid() -> tuple[jax.sharding.Mesh, jax.Array]:
    """A 2x4 Explicit mesh and an (8, 8) array sharded over both axes."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    x = jax.device_put(np.arange(64, dtype=np.float32).reshape(8, 8), NamedSharding(mesh, P("x", "y")))
    return mesh, x


def _ring(n: int = 64) -> tuple[jax.sharding.Mesh, jax.Array]:
    """A 1-D Explicit mesh of 8 devices named 'ring' and an (8, n) array sharded by rows."""
    mesh = jax.make_mesh((8,), ("ring",), axis_types=(AxisType.Explicit,))
    return mesh, jax.device_put(np.ones((8, n), np.float32), NamedSharding(mesh, P("ring")))


def _on_blocks(mesh: jax.sharding.Mesh, body, spec: P, out: P, **kw):
    """`fn(x)` running `body` on each device's block."""
    return lambda x: jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=out, **kw)(x)


def test_hlo_text_counts_opcodes_not_names() -> None:
    """An instruction named after a collective, or used as an operand, is not a second collective."""
    text = ("  %all-reduce.1 = f32[] all-reduce(%x), replica_groups={{0,1}}, to_apply=%add\n"
            "  %all-reduce.2 = f32[] all-reduce(%all-reduce.1), to_apply=%add\n"
            "  %cp = (f32[4]{0}, f32[4]{0}) collective-permute-start(%y), source_target_pairs={{0,1}}\n"
            "  %cpd = f32[4]{0} collective-permute-done(%cp)\n")
    assert hlo_collectives(text) == {"all-reduce": 2, "collective-permute": 1}


@on_eight_devices
def test_hlo_collectives_of_each_kind() -> None:
    """psum, jnp.mean, all_gather, psum_scatter, all_to_all and ppermute compile to their own collectives."""
    mesh, x = _grid()
    both = ("x", "y")
    cases = {
        "psum": (_on_blocks(mesh, lambda b: lax.psum(b.sum(), both), P("x", "y"), P()), {"all-reduce"}),
        "mean": (jnp.mean, {"all-reduce"}),
        "gather": (_on_blocks(mesh, lambda b: lax.all_gather(b, both, tiled=True).sum(), P("x", "y"), P(),
                              check_vma=False), {"all-gather"}),
        "scatter": (_on_blocks(mesh, lambda b: lax.psum_scatter(b, "y", tiled=True), P("x", "y"), P("x", "y")),
                    {"reduce-scatter"}),
        "to_all": (_on_blocks(mesh, lambda b: lax.all_to_all(b, "y", 0, 0, tiled=True), P("x", "y"), P("x", "y")),
                   {"all-to-all"}),
    }
    for name, (fn, kinds) in cases.items():
        assert set(hlo_collectives(compiled_hlo(fn, x))) == kinds, name
    rmesh, r = _ring()
    shift = _on_blocks(rmesh, lambda b: lax.ppermute(b, "ring", RIGHT), P("ring"), P("ring"))
    compiled = jax.jit(shift).lower(r).compile()
    assert hlo_collectives(compiled) == {"collective-permute": 1}
    assert not r.is_deleted()


@on_eight_devices
def test_jaxpr_psum_axes_and_line() -> None:
    """A psum over both axes is found with its axes, its local operand shape and the line that wrote it."""
    mesh, x = _grid()
    line = inspect.currentframe().f_lineno + 1  # the next line writes the psum
    fn = _on_blocks(mesh, lambda b: lax.psum(b.sum(), ("x", "y")), P("x", "y"), P())
    (found,) = collectives_in(fn, x, path=HERE)
    assert (found.primitive, found.axes, found.shapes, found.times) == ("psum_invariant", ("x", "y"), ((),), 1)
    assert found.line == line


@on_eight_devices
def test_python_loop_ppermutes_each_count_once() -> None:
    """Three ppermutes written in a Python loop are three steps of one chunk each, all one shift."""
    mesh, r = _ring(64)

    def body(b):
        """Pass an eighth of the row to the right, three times."""
        chunk = b[:, :8]
        for _ in range(3):
            chunk = lax.ppermute(chunk, "ring", RIGHT)
        return b.at[:, :8].set(chunk)

    found = collectives_in(_on_blocks(mesh, body, P("ring"), P("ring")), r)
    assert [c.primitive for c in found] == ["ppermute"] * 3
    assert {c.axes for c in found} == {("ring",)}
    assert {c.perm for c in found} == {tuple(RIGHT)}
    assert [c.elements for c in found] == [8, 8, 8]
    assert {c.shift(8) for c in found} == {1}
    assert total_steps(found) == 3


@on_eight_devices
def test_scan_lengths_multiply() -> None:
    """A constant-bound fori_loop is a scan of 7; a scan of 2 around a scan of 3 runs its body 6 times."""
    mesh, r = _ring(64)
    left = [(i, (i - 1) % 8) for i in range(8)]

    def fori(b):
        """Seven steps to the left in a fori_loop."""
        return lax.fori_loop(0, 7, lambda _, c: lax.ppermute(c, "ring", left), b)

    (one,) = collectives_in(_on_blocks(mesh, fori, P("ring"), P("ring")), r)
    assert (one.times, one.enclosing, one.shift(8), one.elements) == (7, None, 7, 64)

    def nested(b):
        """A scan of 2 steps, each a scan of 3 ppermutes."""
        inner = lambda c, _: (lax.ppermute(c, "ring", RIGHT), None)  # noqa: E731
        outer = lambda c, _: (lax.scan(inner, c, length=3)[0], None)  # noqa: E731
        return lax.scan(outer, b, length=2)[0]

    (six,) = collectives_in(_on_blocks(mesh, nested, P("ring"), P("ring")), r)
    assert six.times == 6 and total_steps([one, six]) == 13


@on_eight_devices
def test_while_and_cond_are_uncountable() -> None:
    """Under a while loop with a traced bound, or a cond, the number of runs is unknown."""
    mesh, r = _ring(64)

    def dynamic(b):
        """As many steps as the device's index: a while loop."""
        stop = lax.axis_index("ring")
        return lax.fori_loop(0, stop, lambda _, c: lax.ppermute(c, "ring", RIGHT), b)

    (w,) = collectives_in(_on_blocks(mesh, dynamic, P("ring"), P("ring"), check_vma=False), r)
    assert (w.times, w.enclosing) == (None, "while")

    def branch(b):
        """A step only when the first element is positive."""
        return lax.cond(b[0, 0] > 0, lambda c: lax.ppermute(c, "ring", RIGHT), lambda c: c, b)

    found = collectives_in(_on_blocks(mesh, branch, P("ring"), P("ring")), r)
    assert [(c.times, c.enclosing) for c in found] == [(None, "cond")]
    assert total_steps(found) is None


def test_shift_needs_a_full_cyclic_permutation() -> None:
    """Recursive-doubling pairs, a chain without wrap-around, and a mixed permutation have no single shift."""
    from course.grading.observe.traces.collectives import Collective

    def make(perm):
        """A ppermute with these pairs."""
        return Collective("ppermute", ("ring",), tuple(perm), ((8,),), 1, None, None)

    assert make(RIGHT).shift(8) == 1
    assert make([(i, i ^ 2) for i in range(8)]).shift(8) is None
    assert make([(i, i + 1) for i in range(7)]).shift(8) is None
    assert make([(i, (i + 2) % 8) for i in range(8)]).shift(8) == 2
    assert make([(0, 1), (1, 0), *((i, i) for i in range(2, 8))]).shift(8) is None


def test_walk_eqns_gives_each_equation_its_enclosing_ones() -> None:
    """An add inside a scan inside a cond is reported with the cond, then the scan, around it."""
    from course.grading.observe.kernels.kernels import walk_eqns

    def fn(x):
        """A cond whose first branch runs a scan of adds."""
        body = lambda c, _: (c + 1.0, None)  # noqa: E731
        return lax.cond(x.sum() > 0, lambda v: lax.scan(body, v, length=3)[0], lambda v: v * 2.0, x)

    walked = [(e.primitive.name, tuple(o.primitive.name for o in outer))
              for e, outer in walk_eqns(jax.make_jaxpr(fn)(np.ones(2, np.float32)))]
    assert ("add", ("cond", "scan")) in walked
    assert ("mul", ("cond",)) in walked
    assert walked[0][1] == ()


@on_eight_devices
def test_a_tuple_given_to_one_ppermute_is_one_call() -> None:
    """`ppermute((a, b))` binds one equation per leaf; `by_call` merges them, a loop's steps stay apart."""
    mesh, r = _ring(64)

    def body(b):
        """One step sending a chunk and its bfloat16 copy together, then two steps of a loop."""
        chunk = b[:, :8]
        sent, copy = lax.ppermute((chunk, chunk.astype(jnp.bfloat16)), "ring", RIGHT)
        for _ in range(2):
            sent = lax.ppermute(sent, "ring", RIGHT)
        return b.at[:, :8].set(sent + copy.astype(jnp.float32))

    found = collectives_in(_on_blocks(mesh, body, P("ring"), P("ring")), r)
    assert len(found) == 4 and found[0].call == found[1].call != found[2].call != found[3].call
    assert [c.dtypes for c in found] == [("float32",), ("bfloat16",), ("float32",), ("float32",)]
    merged = by_call(found)
    assert [(c.leaves, c.elements) for c in merged] == [(2, 16), (1, 8), (1, 8)]
    assert total_steps(merged) == 3


def test_missing_pairs_of_a_ring_that_does_not_close() -> None:
    """A shift that leaves out the wrap-around pair names it; a full ring and mixed offsets give None."""
    from course.grading.observe.traces.collectives import Collective

    def make(perm):
        """A ppermute with these pairs."""
        return Collective("ppermute", ("ring",), tuple(perm), ((8,),), 1, None, None)

    assert make([(i, i + 1) for i in range(7)]).missing_pairs(8) == (1, [(7, 0)])
    assert make([(i, i - 1) for i in range(2, 8)]).missing_pairs(8) == (7, [(0, 7), (1, 0)])
    assert make(RIGHT).missing_pairs(8) is None
    assert make([(0, 1), (1, 3)]).missing_pairs(8) is None


def test_chain_offset_of_a_pipeline_with_or_without_its_wrap_pair() -> None:
    """Neighbour chains either way give +1 or -1 (the wrap pair optional); gaps, jumps and both ways give None."""
    from course.grading.observe.traces.collectives import Collective

    def make(perm):
        """A ppermute with these pairs."""
        return Collective("ppermute", ("stage",), tuple(perm), ((4,),), 1, None, None)

    assert make([(s, s + 1) for s in range(3)]).chain_offset(4) == 1
    assert make([(s, (s + 1) % 4) for s in range(4)]).chain_offset(4) == 1
    assert make([(s, s - 1) for s in range(1, 4)]).chain_offset(4) == -1
    assert make([(s, (s - 1) % 4) for s in range(4)]).chain_offset(4) == -1
    assert make([(0, 1), (2, 3)]).chain_offset(4) is None  # stage 2 never receives
    assert make([(0, 2), (1, 3)]).chain_offset(4) is None
    assert make([(0, 1), (1, 2), (2, 3), (1, 0)]).chain_offset(4) is None
