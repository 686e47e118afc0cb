"""A correct alternative: one whole-block load, `jnp.concatenate`, and jitted functions built by assignment."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Load everything once, then store once: no read can follow the write."""
    x = x_ref[...]
    n = x.shape[1] // 2
    o_ref[...] = jnp.concatenate([x[:, n:], x[:, :n]], axis=1)


def _aliased_call(kernel, x):
    """`kernel` over `x`, its output aliasing `x`."""
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})(x)


def residual_tanh_kernel(x_ref, o_ref):
    """x + tanh(x) from one load."""
    v = x_ref[...]
    o_ref[...] = v + jnp.tanh(v)


_swap = jax.jit(lambda x: _aliased_call(swap_halves_kernel, x), donate_argnums=0)
_residual = jax.jit(lambda x: _aliased_call(residual_tanh_kernel, x), donate_argnums=0)


def swap_halves(x):
    """Calls the module-level jitted helper."""
    return _swap(x)


def residual_tanh(x):
    """Calls the module-level jitted helper."""
    return _residual(x)
