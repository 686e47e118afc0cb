"""A correct alternative: a factory builds each aliased, donating jit once, and a module-level dict holds them."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Both halves are loaded before either store."""
    n = x_ref.shape[1] // 2
    left, right = x_ref[:, :n], x_ref[:, n:]
    o_ref[:, :n] = right
    o_ref[:, n:] = left


def residual_tanh_kernel(x_ref, o_ref):
    """One load, then one store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


def _aliased(kernel):
    """A jitted wrapper running `kernel` over a donated `x` whose buffer the output reuses."""

    def run(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              input_output_aliases={0: 0})(x)

    return jax.jit(run, donate_argnums=(0,))


_JITS = {"swap": _aliased(swap_halves_kernel), "tanh": _aliased(residual_tanh_kernel)}


def swap_halves(x):
    """Look the jit up and call it."""
    return _JITS["swap"](x)


def residual_tanh(x):
    """Look the jit up and call it."""
    return _JITS["tanh"](x)
