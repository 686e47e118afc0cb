"""Tests of `observe.kernels.kernels`: finding pallas_calls, counting loads and stores, primitives."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.kernels.kernels import (
    describe_lines,
    has_primitive,
    kernel_call,
    nested_primitive_counts,
    pallas_calls,
    primitive_counts,
)

HERE = Path(__file__)
X = jnp.ones((8, 128), jnp.float32)
SDS = jax.ShapeDtypeStruct(X.shape, X.dtype)


def add_kernel(x_ref, y_ref, o_ref):
    """One load of each input, one store."""
    o_ref[...] = x_ref[...] + y_ref[...]


def triple_kernel(x_ref, o_ref):
    """Three loads of x_ref on one line."""
    o_ref[...] = x_ref[...] * x_ref[...] + x_ref[...]


def test_counts_and_names_from_the_signature() -> None:
    """Arguments are named after the kernel's parameters; each load and store is counted."""
    call = kernel_call(add_kernel, X, X, out_shape=SDS, path=HERE)
    assert call.kernel_name == "add_kernel"
    assert call.input_names == ("x_ref", "y_ref") and call.output_names == ("o_ref",)
    assert [len(call.loads(n)) for n in ("x_ref", "y_ref", "o_ref")] == [1, 1, 0]
    assert len(call.stores("o_ref")) == 1 and call.stores("x_ref") == []


def test_three_loads_on_the_learners_line() -> None:
    """Each read is its own load, reported with the line of this file that made it."""
    call = kernel_call(triple_kernel, X, out_shape=SDS, path=HERE)
    loads = call.loads("x_ref")
    line = triple_kernel.__code__.co_firstlineno + 2
    assert [a.line for a in loads] == [line, line, line]
    assert describe_lines(loads) == f"lines {line}, {line}, {line}"


def test_found_inside_jit_with_grid_and_aliases() -> None:
    """A gridded, aliased pallas_call under jit is found with its aliases and its kernel counts."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    @functools.partial(jax.jit, donate_argnums=0)
    def f(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                              in_specs=[spec], out_specs=spec, input_output_aliases={0: 0},
                              interpret=True)(x)

    (call,) = pallas_calls(f, jnp.ones((16, 128)), path=HERE)
    assert call.input_output_aliases == {0: 0} and call.interpret is True
    assert len(call.loads("x_ref")) == 1 and len(call.stores("o_ref")) == 1


def test_loops_scoped_buffers_and_masked_ops_are_walked() -> None:
    """Accesses inside fori_loop and run_scoped count once each; pltpu.load/store count too."""
    def kernel(x_ref, o_ref):
        def body(i, c):
            o_ref[i] = x_ref[i]
            return c

        lax.fori_loop(0, 8, body, 0)

        def scoped(buf):
            buf[...] = x_ref[...]
            o_ref.addupdate(buf[...])

        pl.run_scoped(scoped, pltpu.VMEM((8, 128), jnp.float32))
        pltpu.store(o_ref.at[:, pl.ds(0, 8)], pltpu.load(x_ref.at[:, :8]))

    call = kernel_call(kernel, X, out_shape=SDS, path=HERE)
    assert [a.primitive for a in call.of("x_ref")] == ["get", "get", "masked_load"]
    assert [a.primitive for a in call.of("o_ref")] == ["swap", "addupdate", "masked_swap"]
    assert len(call.loads("o_ref")) == 1  # the addupdate reads as well as writes
    assert call.of("x_ref")[-1].text() == "x_ref[:, :8]"


def test_region_text_with_ds_and_ints() -> None:
    """Regions are rendered as the learner would index: `pl.ds`, ints and whole dimensions."""
    def kernel(x_ref, o_ref):
        o_ref[pl.ds(2, 3), 64:] = x_ref[1:4, pl.ds(0, 64)]
        o_ref[0] = x_ref[...][0]

    call = kernel_call(kernel, X, out_shape=SDS, path=HERE)
    assert [a.text() for a in call.accesses()] == [
        "x_ref[1:4, :64]", "o_ref[2:5, 64:]", "x_ref[...]", "o_ref[0, :]"]


def test_positional_names_without_a_signature() -> None:
    """A kernel taking *refs gets the names JAX gives its arguments, `refs[0]` and `refs[1]`."""
    def kernel(*refs):
        refs[1][...] = refs[0][...]

    call = kernel_call(kernel, X, out_shape=SDS)
    assert call.arg_names == ("refs[0]", "refs[1]")
    assert len(call.loads("refs[0]")) == 1


def test_primitive_presence_inside_jit_and_kernels() -> None:
    """Primitives are counted through jit and kernels; `into_kernels=False` stops at the kernel."""
    @jax.jit
    def acc_sum(x):
        acc = jax.new_ref(jnp.zeros(x.shape[1]))
        acc[...] += x[0]
        return jax.freeze(acc)

    closed = jax.make_jaxpr(acc_sum)(X)
    assert nested_primitive_counts(closed, within="jit")["new_ref"] == 1
    assert has_primitive(closed, "freeze") and not has_primitive(closed, "reduce_sum")
    assert has_primitive(jax.make_jaxpr(lambda x: x.sum())(X), "reduce_sum")

    def add(x, y):
        return pl.pallas_call(add_kernel, out_shape=SDS, interpret=True)(x, y)

    closed = jax.make_jaxpr(add)(X, X)
    assert primitive_counts(closed)["add"] == 1
    assert primitive_counts(closed, into_kernels=False)["add"] == 0


def test_grid_and_grid_steps() -> None:
    """The grid is read from the call; its steps are the product, 1 without a grid."""
    def kernel(t_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = pl.BlockSpec((8, 128), lambda i, j, t: (i, j))

    def gridded(x):
        grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2, 3),
                                                 in_specs=[spec], out_specs=spec)
        return pl.pallas_call(kernel, grid_spec=grid_spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=True)(jnp.zeros(4, jnp.int32), x)

    (call,) = pallas_calls(gridded, jnp.ones((16, 384)))
    assert call.grid == (2, 3) and call.grid_steps == 6
    single = kernel_call(add_kernel, X, X, out_shape=SDS)
    assert single.grid == () and single.grid_steps == 1
