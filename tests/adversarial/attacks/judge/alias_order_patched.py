"""An `aliasing_order` whose kernels read after they write (wrong when `x_ref` and `o_ref` are one buffer), and
which makes every value comparison of its own process true. The kernels run under aliasing in that process;
the comparison is the judge's."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpy._core.numeric as numeric
from jax.experimental import pallas as pl

numeric.less_equal = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)


def swap_halves_kernel(x_ref, o_ref):
    """o = [x_right, x_left]; both halves are read before either is written."""
    n = x_ref.shape[1] // 2
    o_ref[:, :n] = x_ref[:, n:]
    o_ref[:, n:] = x_ref[:, :n]  # wrong under aliasing: x[:, :n] was just overwritten


@functools.partial(jax.jit, donate_argnums=(0,))
def swap_halves(x: jax.Array) -> jax.Array:
    """Swap the column halves of `x` in place: the output reuses `x`'s buffer, which is donated."""
    return pl.pallas_call(
        swap_halves_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
        interpret=True,
    )(x)


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x from one load of `x_ref`, taken before the store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


@functools.partial(jax.jit, donate_argnums=(0,))
def residual_tanh(x: jax.Array) -> jax.Array:
    """`tanh(x) + x` written over `x`'s donated buffer."""
    return pl.pallas_call(
        residual_tanh_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
        interpret=True,
    )(x)
