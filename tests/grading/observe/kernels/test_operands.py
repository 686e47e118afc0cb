"""Tests of `observe.kernels.operands`: operands are the inputs as given, the output is the result."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from course.grading.observe.kernels.operands import kernel_flow, work_outside

HERE = Path(__file__)
X = jax.ShapeDtypeStruct((8, 128), jnp.bfloat16)


def add_kernel(x_ref, y_ref, o_ref):
    """o = x + y."""
    o_ref[...] = (x_ref[...] + y_ref[...]).astype(o_ref.dtype)


def _add(x, y, dtype=None):
    """The kernel on x and y, returning `dtype` (x's by default)."""
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, dtype or x.dtype), interpret=True)(x, y)


def test_arguments_flow_in_and_the_kernel_output_out_through_jit_and_reshapes() -> None:
    """Operands are arguments 0 and 1 (through a jit and a reshape); the result is the kernel's output."""
    flow = kernel_flow(jax.jit(lambda x, y: _add(x, y.reshape(8, 128)).reshape(8, 128)), X, X, path=HERE)
    (call,) = flow.calls
    assert [f.describe() for f in flow.operands[0]] == ["argument 0", "argument 1"]
    assert [f.kind for f in flow.results] == ["kernel"] and call.kernel_name == "add_kernel"


def test_a_conversion_before_or_after_the_kernel_is_an_operation_with_its_line() -> None:
    """x.astype before the kernel and out.astype after it are passes over HBM, named with the learner's line."""
    def upcast(x, y):
        return _add(x.astype(jnp.float32), y.astype(jnp.float32))

    before = kernel_flow(upcast, X, X, path=HERE).operands[0][0]
    assert before.kind == "op" and before.op == "convert_element_type"
    assert before.line == upcast.__code__.co_firstlineno + 1

    def downcast(x, y):
        return _add(x, y, jnp.float32).astype(x.dtype)

    (after,) = kernel_flow(downcast, X, X, path=HERE).results
    assert after.describe() == f"`convert_element_type` at line {downcast.__code__.co_firstlineno + 1}"


def test_work_outside_kernels_is_listed_with_lines() -> None:
    """A dot in the wrapper is found; the kernel's own primitives are not looked at."""
    def wrapper(x, y):
        p = jnp.dot(x.T, x)
        return _add(p[:8].astype(x.dtype), y)

    found = work_outside(wrapper, X, X, prims=frozenset({"dot_general", "add"}), path=HERE)
    assert found == [("dot_general", wrapper.__code__.co_firstlineno + 1)]
