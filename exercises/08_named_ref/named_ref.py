"""Exercise `named_ref`: a view with axis names over one `jax.Ref`.

Fill in each TODO; `course show named_ref` prints the lesson and the task.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


# TODO: make NamedRef a pytree whose only leaf is the `jax.Ref` (the names are static aux data),
# for example with `@tree_util.register_pytree_node_class` and the two methods below.
class NamedRef:
    """A `jax.Ref` whose axes have names; index it with `...` or a dict {axis: int | slice}."""

    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    @property
    def shape(self):
        """The buffer's shape, as a tuple of ints."""
        # TODO: known from the ref's type, without reading the buffer.
        raise NotImplementedError("NamedRef.shape")

    @property
    def named_shape(self):
        """{axis name: length}, in axis order."""
        # TODO
        raise NotImplementedError("NamedRef.named_shape")

    @property
    def dtype(self):
        """The buffer's dtype."""
        # TODO
        raise NotImplementedError("NamedRef.dtype")

    def tree_flatten(self):
        """(children, aux data): the ref is the only child; the names are static."""
        # TODO
        raise NotImplementedError("NamedRef.tree_flatten")

    @classmethod
    def tree_unflatten(cls, axes, children):
        """Rebuild a NamedRef around the child it is given."""
        # TODO
        raise NotImplementedError("NamedRef.tree_unflatten")

    def __getitem__(self, sel):
        """Read the selection `sel` (`...` or a dict {axis: int | slice}): one load."""
        # TODO: turn the names into one positional index, in the order of `self.axes`.
        raise NotImplementedError("NamedRef.__getitem__")

    def __setitem__(self, sel, value):
        """Write `value` into the selection: cast it, fill a scalar, refuse any other shape; one store."""
        # TODO
        raise NotImplementedError("NamedRef.__setitem__")


def new_ref(value, axes):
    """A NamedRef over a new `jax.Ref` holding `value`; one name per dimension, no repeats."""
    # TODO: ValueError when the names do not fit `value`.
    raise NotImplementedError("new_ref")


def freeze(ref):
    """The buffer as an array, ending the reference (with `jax.freeze`)."""
    # TODO
    raise NotImplementedError("freeze")
