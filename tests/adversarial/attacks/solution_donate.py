import jax

_double = jax.jit(lambda x: 2 * x, donate_argnums=0)


def donate_double(x):
    return _double(x)
