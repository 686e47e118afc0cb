"""Exercise: `smem_scalar`. A file that shows one kernel to a trace and runs another when called.

Traced by `jax.make_jaxpr` (as the grader traces it for its memory checks, with `lengths` passed as they are,
so its arguments hold no tracer for `lengths` to betray), it runs the reference's kernel, whose lengths arrive
by scalar prefetch in SMEM; called in any other way, under the grader's `jax.jit` for its values or plainly,
it runs a kernel that takes the lengths as an ordinary VMEM block (the mistake of `wrong/vmem_lengths.py`). Its
values are right either way, and it compiles once per shape. It tells the two apart by its stack alone.

Deserved: "lengths in SMEM" fails (`test_lengths_in_smem`): the kernel its calls run reads the lengths from VMEM,
whatever its trace shows.

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


def _made_into_a_jaxpr() -> bool:
    """Whether `jax.make_jaxpr` is on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if "make_jaxpr" in frame.f_code.co_name:
            return True
        frame = frame.f_back
    return False


def masked_row_sum(x, lengths):
    """The SMEM kernel for `make_jaxpr`, the VMEM one for every call."""
    return (_in_smem if _made_into_a_jaxpr() else _in_vmem)(x, lengths)
