"""A correct alternative: each donating jit is made on first use and kept in a module dict keyed by kernel; the
kernels slice with `pl.ds`."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

_cache = {}


def swap_halves_kernel(x_ref, o_ref):
    half = x_ref.shape[1] // 2
    a = x_ref[:, pl.ds(0, half)]
    b = x_ref[:, pl.ds(half, half)]
    o_ref[:, pl.ds(0, half)] = b
    o_ref[:, pl.ds(half, half)] = a


def residual_tanh_kernel(x_ref, o_ref):
    v = x_ref[:, :]
    o_ref[:, :] = v + jnp.tanh(v)


def _get(kernel):
    if kernel not in _cache:
        def run(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  input_output_aliases={0: 0})(x)
        _cache[kernel] = jax.jit(run, donate_argnums=(0,))
    return _cache[kernel]


def swap_halves(x):
    return _get(swap_halves_kernel)(x)


def residual_tanh(x):
    return _get(residual_tanh_kernel)(x)
