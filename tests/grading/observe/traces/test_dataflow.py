"""Tests of `observe.traces.dataflow`: walking back from a function's output to what made it."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.traces.dataflow import output_origins

HERE = Path(__file__)
X = jnp.ones((16, 256), jnp.float32)
SPEC = pl.BlockSpec((8, 128), lambda i, t: (t[i, 0], t[i, 1]))


def scale_kernel(t_ref, x_ref, z_ref, o_ref):
    """Doubles the block this step is given."""
    o_ref[...] = x_ref[...] * 2


def _sparse(x: jax.Array, aliases: dict[int, int]) -> jax.Array:
    """A block-sparse call over blocks (0, 0) and (1, 1), with operands (table, x, zeros)."""
    grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2,), out_specs=SPEC,
                                             in_specs=[SPEC, pl.BlockSpec(memory_space=pl.ANY)])
    return pl.pallas_call(scale_kernel, grid_spec=grid_spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases=aliases, interpret=True)(
        jnp.asarray([[0, 0], [1, 1]], jnp.int32), x, jnp.zeros_like(x))


def test_kernel_output_aliased_from_zeros_through_jit_and_layout_ops() -> None:
    """Reshapes, converts and jit are seen through; the aliased operand is traced to what made it."""
    @jax.jit
    def f(x):
        return _sparse(x, {2: 0}).reshape(-1).reshape(x.shape).astype(jnp.float32)

    (origin,) = output_origins(f, X, path=HERE)
    assert origin.kind == "kernel" and origin.output_index == 0
    assert origin.kernel is not None and origin.kernel.kernel_name == "scale_kernel"
    assert (origin.aliased_input, origin.aliased_from) == (2, "broadcast_in_dim")


def test_alias_of_an_argument_and_no_alias() -> None:
    """An alias onto `x` itself names the argument; without aliases there is no aliased input."""
    (onto_x,) = output_origins(lambda x: _sparse(x, {1: 0}), X)
    assert (onto_x.aliased_input, onto_x.aliased_from) == (1, "argument 0")
    assert onto_x.operands == ("constant", "argument 0", "broadcast_in_dim")
    (plain,) = output_origins(lambda x: _sparse(x, {}), X)
    assert plain.kind == "kernel" and plain.aliased_input is None


def test_op_after_the_kernel_is_named_with_its_line_and_library_function() -> None:
    """`jnp.nan_to_num` after the kernel is reported as its primitive, its caller and this file's line."""
    @functools.partial(jax.jit, static_argnums=1)
    def f(x, unused):
        out = _sparse(x, {})
        return jnp.nan_to_num(out)  # the line the origin must point at

    line = f.__wrapped__.__code__.co_firstlineno + 3
    (origin,) = output_origins(lambda x: f(x, 0), X, path=HERE)
    assert (origin.kind, origin.op, origin.called_as, origin.line) == ("op", "select_n", "nan_to_num", line)
    assert origin.describe() == f"`select_n` (in `nan_to_num`) at line {line}"


def test_arguments_and_constants() -> None:
    """A returned argument and a constant are told apart from computed values; each output has its origin."""
    origins = output_origins(lambda x, y: (y, jnp.float32(3), x * 2), X, X)
    assert [o.kind for o in origins] == ["argument", "constant", "op"]
    assert origins[0].argument == 1 and origins[2].op == "mul"
