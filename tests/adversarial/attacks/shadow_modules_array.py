"""Wrong answer graded with conftest.py, pytest.py, jax.py and numpy.py placed beside it."""
import jax  # must be the real JAX, not the file beside this one


def double_array(x: jax.Array) -> jax.Array:
    return 3 * x
