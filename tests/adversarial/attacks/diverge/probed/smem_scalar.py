"""Exercise: `smem_scalar`. A file that shows one kernel to a trace, runs another for its values, and raises
in the plain call made beside its trace.

As `../smem_scalar.py`, the SMEM kernel for `jax.make_jaxpr` and a VMEM one for every call, but when the call
comes from the executor's probe (`probe.plain_call` on its stack: the plain call made at the same arguments as a
trace), it raises instead, so that no kernel of that call can be compared with the trace. A plain call that
raised said nothing beside the grader's `jax.jit`, where a function may need the jit to run; beside a trace
made with the learner's own arguments nothing excuses it.

Deserved: "lengths in SMEM" fails (`test_lengths_in_smem`).

Scored through `course check` when this file was added: 8 of 8, "passed".
"""

import sys

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """o[b] = sum of the first lengths[b] rows of x[b]; one grid step per b."""
    b = pl.program_id(0)
    n = lengths_ref[b]
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < n, x, 0.0), axis=0, keepdims=True)


@jax.jit
def _in_smem(x, lengths):
    """The reference: lengths by scalar prefetch."""
    batch, time, lanes = x.shape
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(batch,),
        in_specs=[pl.BlockSpec((None, time, lanes), lambda b, lengths_ref: (b, 0, 0))],
        out_specs=pl.BlockSpec((batch, lanes), lambda b, lengths_ref: (0, 0)))
    return pl.pallas_call(masked_row_sum_kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype))(lengths, x)


@jax.jit
def _in_vmem(x, lengths):
    """The same sums, the lengths a (B,) VMEM block."""
    batch, time, lanes = x.shape
    return pl.pallas_call(
        masked_row_sum_kernel, grid=(batch,),
        in_specs=[pl.BlockSpec((batch,), lambda b: (0,)), pl.BlockSpec((None, time, lanes), lambda b: (b, 0, 0))],
        out_specs=pl.BlockSpec((batch, lanes), lambda b: (0, 0)),
        out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype))(lengths, x)


def _on_stack(name: str) -> bool:
    """Whether a function called `name` is on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if name in frame.f_code.co_name:
            return True
        frame = frame.f_back
    return False


def masked_row_sum(x, lengths):
    """The SMEM kernel for `make_jaxpr`, an error for the probe beside it, the VMEM one for every other call."""
    if _on_stack("make_jaxpr"):
        return _in_smem(x, lengths)
    if _on_stack("plain_call"):
        raise RuntimeError("not now")
    return _in_vmem(x, lengths)
