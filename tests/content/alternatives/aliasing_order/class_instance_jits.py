"""A correct alternative: one object made at import holds both donating jits, built in its constructor."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Read the whole block into a value, then write the swapped value."""
    x = x_ref[...]
    o_ref[...] = jnp.roll(x, x.shape[1] // 2, axis=1)


def residual_tanh_kernel(x_ref, o_ref):
    """The residual from a single load."""
    v = x_ref[...]
    o_ref[...] = jnp.add(jnp.tanh(v), v)


class AliasedKernels:
    """Compiles each kernel's aliased call once, when the module makes the instance."""

    def __init__(self):
        self.swap = jax.jit(self._call(swap_halves_kernel), donate_argnums=0)
        self.residual = jax.jit(self._call(residual_tanh_kernel), donate_argnums=0)

    @staticmethod
    def _call(kernel):
        def run(x):
            spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
            return pl.pallas_call(kernel, out_shape=spec, input_output_aliases={0: 0})(x)

        return run


_KERNELS = AliasedKernels()


def swap_halves(x):
    """x with its column halves swapped, over x's own buffer."""
    return _KERNELS.swap(x)


def residual_tanh(x):
    """tanh(x) + x over x's own buffer."""
    return _KERNELS.residual(x)
