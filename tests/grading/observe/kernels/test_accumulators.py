"""Tests of `observe.kernels.accumulators`: the taint pass that finds refs summing dot products into themselves."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.grading.observe.kernels.accumulators import find_accumulators, taint_pass
from course.grading.observe.kernels.kernels import pallas_calls

HERE = Path(__file__)
X = jax.ShapeDtypeStruct((128, 256), jnp.bfloat16)


def _call(kernel, scratch=(), out_dtype=jnp.bfloat16, n_in=2):
    """A one-step pallas_call of `kernel` on bfloat16 (128, 256) inputs."""
    def run(*args):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((128, 256), out_dtype), grid=(2,),
                              in_specs=[pl.BlockSpec((128, 256), lambda i: (0, 0))] * n_in,
                              out_specs=pl.BlockSpec((128, 256), lambda i: (0, 0)),
                              scratch_shapes=list(scratch), interpret=True)(*args)

    (call,) = pallas_calls(run, *([X] * n_in), path=HERE)
    return call


def _line(fn, offset):
    """The line `offset` lines below the `def` of `fn`."""
    return fn.__code__.co_firstlineno + offset


def scratch_kernel(x_ref, y_ref, o_ref, acc_ref):
    """The textbook accumulator, zeroed under pl.when, written out once."""
    @pl.when(pl.program_id(0) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...].T, preferred_element_type=jnp.float32)
    o_ref[:, :128] = acc_ref[...].astype(o_ref.dtype)


def where_kernel(x_ref, y_ref, o_ref, acc_ref):
    """The jnp.where style: a load of the accumulator selected against zeros, plus a dot."""
    prev = jnp.where(pl.program_id(0) == 0, 0.0, acc_ref[...])
    acc_ref[...] = prev + jnp.dot(x_ref[...], y_ref[...].T, preferred_element_type=jnp.float32)


def output_kernel(x_ref, y_ref, o_ref):
    """Accumulates into the (bfloat16) output itself, through an addupdate."""
    o_ref[:, :128] += jnp.dot(x_ref[...], y_ref[...].T, preferred_element_type=jnp.float32).astype(o_ref.dtype)


def loop_kernel(x_ref, y_ref, o_ref, acc_ref):
    """A fori_loop over sub-blocks and a run_scoped temporary that is not an accumulator."""
    def step(s, c):
        acc_ref[...] += jnp.dot(x_ref[:, pl.ds(s * 128, 128)], y_ref[:, pl.ds(s * 128, 128)].T,
                                preferred_element_type=jnp.float32)
        return c

    lax.fori_loop(0, 2, step, 0)

    def body(tmp):
        tmp[...] = acc_ref[...]
        o_ref[:, :128] = tmp[...].astype(o_ref.dtype)

    pl.run_scoped(body, pltpu.VMEM((128, 128), jnp.float32))


def while_kernel(x_ref, y_ref, o_ref, acc_ref):
    """Sums two sub-blocks in a while_loop, through a jitted helper."""
    @jax.jit
    def add_block(s):
        acc_ref[...] += jnp.dot(x_ref[:, pl.ds(s * 128, 128)], y_ref[:, pl.ds(s * 128, 128)].T,
                                preferred_element_type=jnp.float32)

    def body(s):
        add_block(s)
        return s + 1

    lax.while_loop(lambda s: s < 2, body, 0)
    o_ref[:, :128] = acc_ref[...].astype(o_ref.dtype)


def test_the_rule_finds_each_style_with_its_line() -> None:
    """Scratch +=, jnp.where, the output block, a fori_loop: each is found on the line that adds."""
    f32 = [pltpu.VMEM((128, 128), jnp.float32)]
    (acc,) = find_accumulators(_call(scratch_kernel, f32))
    assert (acc.name, acc.space, acc.dtype.name, acc.line) == ("acc_ref", "vmem", "float32", _line(scratch_kernel, 6))
    (acc,) = find_accumulators(_call(where_kernel, f32))
    assert acc.name == "acc_ref" and acc.line == _line(where_kernel, 3)
    (acc,) = find_accumulators(_call(output_kernel))
    assert (acc.name, acc.space, acc.dtype.name) == ("o_ref", "default", "bfloat16")
    (acc,) = find_accumulators(_call(loop_kernel, [pltpu.VMEM((128, 128), jnp.float32)]))
    assert acc.name == "acc_ref" and acc.line == _line(loop_kernel, 3)
    (acc,) = find_accumulators(_call(while_kernel, [pltpu.VMEM((128, 128), jnp.float32)]))
    assert acc.name == "acc_ref" and acc.line == _line(while_kernel, 4)


def test_a_store_of_a_loaded_sum_is_not_an_accumulator() -> None:
    """o_ref = acc_ref (a dot's sum, but not o_ref's own) and a run_scoped copy are not accumulators."""
    names = {a.name for a in find_accumulators(_call(loop_kernel, [pltpu.VMEM((128, 128), jnp.float32)]))}
    assert names == {"acc_ref"}


def flash_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
    """One online-softmax step: m, l and acc each depend on a dot and on themselves."""
    s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32)
    m_new = jnp.maximum(m_ref[...], s.max(axis=1, keepdims=True))
    alpha = jnp.exp(m_ref[...] - m_new)
    p = jnp.exp(s - m_new)
    l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
    acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
    m_ref[...] = m_new
    o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


def test_flash_state_is_three_accumulators_and_taint_flows_through_refs() -> None:
    """m, l and acc are found; what was stored in acc carries v's taint into the final divide."""
    scratch = [pltpu.VMEM((128, 1), jnp.float32)] * 2 + [pltpu.VMEM((128, 256), jnp.float32)]
    call = _call(flash_kernel, scratch, n_in=3)
    passed = taint_pass(call)
    assert [a.name for a in passed.accumulators()] == ["l_ref", "acc_ref", "m_ref"]
    (div,) = [e for e in call.jaxpr.eqns if e.primitive.name == "div"]
    assert passed.depends_on(div.invars[0], "v_ref") and passed.depends_on(div.invars[0], "q_ref")
    (first_dot,) = [e for e in call.jaxpr.eqns if e.primitive.name == "dot_general"][:1]
    assert not passed.depends_on(first_dot.outvars[0], "v_ref")
