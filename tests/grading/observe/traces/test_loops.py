"""Tests of `observe.traces.loops`: how many times each equation runs, the loops of a jaxpr, and its size."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from course.grading.observe.traces.loops import eqn_runs, jaxpr_size, line_text, loops_in, times_run, type_text


def _runs(fn, *args, **kw):
    """{primitive: [(times, unknown), ...]} of the traced fn."""
    found: dict[str, list] = {}
    for run in eqn_runs(jax.make_jaxpr(fn)(*args), **kw):
        found.setdefault(run.primitive, []).append((run.times, run.unknown))
    return found


def test_nested_scans_multiply_and_calls_count_once() -> None:
    """A matmul in a scan of 3 inside a scan of 4 runs 12 times; jit and checkpoint bodies add nothing."""
    def inner(h, _):
        return jax.checkpoint(lambda v: jax.jit(lambda u: u @ u)(v))(h), None

    def outer(h, _):
        return lax.scan(inner, h, None, length=3)[0], None

    runs = _runs(lambda x: lax.scan(outer, x, None, length=4)[0], jnp.eye(4))
    assert runs["dot_general"] == [(12, None)]
    assert runs["scan"] == [(1, None), (4, None)]


def test_a_fori_loop_with_python_bounds_is_a_scan_of_its_trip_count() -> None:
    """fori_loop(0, 5, ...) traces to a scan of length 5, so its body's equations run 5 times."""
    runs = _runs(lambda x: lax.fori_loop(0, 5, lambda i, h: h @ h, x), jnp.eye(3))
    assert runs["dot_general"] == [(5, None)]


def test_while_and_cond_make_the_count_unknown_and_say_where(learner_module) -> None:
    """Under a while_loop (traced bounds) or a cond, times is None and the reason names the learner's line."""
    module = learner_module("""
        import jax.numpy as jnp
        from jax import lax

        def loop(x, n):
            return lax.fori_loop(0, n, lambda i, h: h @ h, x)

        def branch(x):
            return lax.cond(x[0, 0] > 0, lambda h: h @ h, lambda h: h, x)
    """)
    path = module.__file__
    (matmul,) = [r for r in eqn_runs(jax.make_jaxpr(module.loop)(jnp.eye(2), 3), path=path)
                 if r.primitive == "dot_general"]
    assert matmul.times is None and matmul.unknown == "inside a while_loop at line 6" and matmul.line == 6
    (matmul,) = [r for r in eqn_runs(jax.make_jaxpr(module.branch)(jnp.eye(2)), path=path)
                 if r.primitive == "dot_general"]
    assert matmul.times is None and matmul.unknown == "inside a cond at line 9"


def test_a_kernel_body_runs_once_per_grid_step() -> None:
    """Inside a pallas_call with a grid of (2, 3), the kernel's equations run 6 times."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    def f(x):
        spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2, 3),
                              in_specs=[spec], out_specs=spec, interpret=True)(x)

    runs = _runs(f, jnp.zeros((16, 384)))
    assert runs["mul"] == [(6, None)]
    assert _runs(f, jnp.zeros((16, 384)), into_kernels=False).get("mul") is None


def test_times_run_of_no_enclosing_equation_is_one() -> None:
    """An equation at the top level runs once."""
    assert times_run(()) == (1, None)


def test_loops_report_length_direction_unroll_and_carry() -> None:
    """Each scan and while of a jaxpr, with its trip count, unroll, direction and carried types."""
    def f(x):
        h, _ = lax.scan(lambda c, _: (c * 2, None), x, None, length=6, unroll=2)
        h, _ = lax.scan(lambda c, _: (c + 1, None), h, None, length=4, unroll=True, reverse=True)
        return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, h))[1]

    scan_a, scan_b, loop = loops_in(jax.make_jaxpr(f)(jnp.ones((2, 3), jnp.bfloat16)))
    assert (scan_a.kind, scan_a.length, scan_a.unroll, scan_a.reverse) == ("scan", 6, 2, False)
    assert (scan_b.length, scan_b.unroll, scan_b.reverse) == (4, 4, True)
    assert scan_a.carry == ("bfloat16[2, 3]",) and scan_a.carry_dtypes() == {"bfloat16"}
    assert (loop.kind, loop.length, loop.carry) == ("while", None, ("int32[]", "bfloat16[2, 3]"))


def test_jaxpr_size_counts_nested_equations_once_per_loop_body() -> None:
    """A Python loop grows the jaxpr with every layer; a scan's body is counted once."""
    def unrolled(x, n):
        for _ in range(n):
            x = jnp.tanh(x @ x)
        return x

    def scanned(x, n):
        return lax.scan(lambda h, _: (jnp.tanh(h @ h), None), x, None, length=n)[0]

    x = jnp.eye(4)
    assert [jaxpr_size(jax.make_jaxpr(lambda v, n=n: unrolled(v, n))(x)) for n in (2, 8)] == [4, 16]
    assert [jaxpr_size(jax.make_jaxpr(lambda v, n=n: scanned(v, n))(x)) for n in (2, 8)] == [3, 3]


def test_type_and_line_texts_read_as_messages_quote_them(learner_module) -> None:
    """`float32[512, 64]` for an aval; `line N: code` from the learner's file."""
    module = learner_module("X = 1\ny = X + 1\n")
    assert type_text(jax.ShapeDtypeStruct((512, 64), jnp.float32)) == "float32[512, 64]"
    assert type_text(jax.ShapeDtypeStruct((), jnp.int32)) == "int32[]"
    assert line_text(2, module.__file__) == "line 2: y = X + 1"
    assert line_text(None, module.__file__) == "an unknown line"
