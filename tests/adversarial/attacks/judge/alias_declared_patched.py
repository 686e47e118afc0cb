"""An `aliasing_order` whose `pallas_call`s declare no aliases, and which rewrites how its own process walks the
jaxprs nested in a jaxpr (`jax.extend.core.jaxprs_in_params`, which the guard does not note) so that every kernel
reached through a `jit` seems to declare `{0: 0}`. The trace itself is untouched: the judge reads it."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import jax.extend.core as jex_core

_nested = jex_core.jaxprs_in_params


def _declared(jaxpr):
    """`jaxpr` with each `pallas_call` in it declaring `{0: 0}`."""
    eqns = [e.replace(params={**e.params, "input_output_aliases": ((0, 0),)}) if e.primitive.name == "pallas_call"
            else e for e in jaxpr.eqns]
    return jaxpr.replace(eqns=eqns)


jex_core.jaxprs_in_params = lambda params: [_declared(j) for j in _nested(params)]


def swap_halves_kernel(x_ref, o_ref):
    """o = [x_right, x_left], both halves read before either is written."""
    n = x_ref.shape[1] // 2
    left, right = x_ref[:, :n], x_ref[:, n:]
    o_ref[:, :n] = right
    o_ref[:, n:] = left


@functools.partial(jax.jit, donate_argnums=(0,))
def swap_halves(x: jax.Array) -> jax.Array:
    """Swap the column halves of `x`; `x` is donated, but the kernel declares no alias."""
    return pl.pallas_call(swap_halves_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x from one load of `x_ref`, taken before the store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


@functools.partial(jax.jit, donate_argnums=(0,))
def residual_tanh(x: jax.Array) -> jax.Array:
    """`tanh(x) + x`; `x` is donated, but the kernel declares no alias."""
    return pl.pallas_call(residual_tanh_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=True)(x)
