"""Exercise: `aliasing_order` (Part 1, buffers, refs, aliasing). A file that shows one program when traced and
runs another when called.

The kernels and their declared aliases are right. Traced (its argument is a `jax.core.Tracer`, as when the
grader traces it for the programs it runs), each wrapper calls a jit that donates `x`; called with a real
array, it calls a jit that donates nothing and deletes `x` by hand afterwards, so that `x` looks consumed (the
mistake of `attacks/judge/delete_not_donate.py`).

Deserved: "`x` consumed" fails (`test_x_consumed`): the calls the learner's code really makes reuse no buffer,
whatever their traces show.

Scored through `course check` when this file was added: 10 of 10, "passed".
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """o = [x_right, x_left]; both halves are read before either is written."""
    n = x_ref.shape[1] // 2
    left = x_ref[:, :n]
    right = x_ref[:, n:]
    o_ref[:, :n] = right
    o_ref[:, n:] = left


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x from one load of `x_ref`, taken before the store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


def _call(kernel, x):
    """The kernel with its output aliased to its input."""
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0},
                          interpret=True)(x)


_DONATING = {k: jax.jit(lambda x, k=k: _call(k, x), donate_argnums=0)
             for k in (swap_halves_kernel, residual_tanh_kernel)}
_PLAIN = {k: jax.jit(lambda x, k=k: _call(k, x)) for k in (swap_halves_kernel, residual_tanh_kernel)}


def _run(kernel, x):
    """Donating when traced; when called, donating nothing, and `x` deleted by hand."""
    if isinstance(x, jax.core.Tracer):
        return _DONATING[kernel](x)
    out = jax.block_until_ready(_PLAIN[kernel](x))
    x.delete()
    return out


def swap_halves(x):
    """Swap the halves of the last axis."""
    return _run(swap_halves_kernel, x)


def residual_tanh(x):
    """tanh(x) + x."""
    return _run(residual_tanh_kernel, x)
