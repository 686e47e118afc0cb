"""Exercise `slice_ref`: views of a named ref that compose into one index.

`new_ref`, `freeze`, the write rules (`_checked_value`) and most of `NamedRef` come from
`named_ref` and are given. Fill in each TODO; `course show slice_ref` prints the lesson and the task.
"""

import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


def _checked_value(value, shape, dtype, axes):
    """`value` cast to `dtype`, a scalar filled to `shape`; ValueError naming `axes` for another shape."""
    value = jnp.asarray(value, dtype)
    if value.ndim == 0:
        return jnp.broadcast_to(value, shape)
    if value.shape != tuple(shape):
        raise ValueError(f"cannot write a value of shape {value.shape} into the selection over axes "
                         f"{tuple(axes)}, of shape {tuple(shape)}")
    return value


@tree_util.register_pytree_node_class
class NamedRef:
    """A `jax.Ref` whose axes have names; `ref[sel]`, `ref[sel] = value` and `ref.slice(sel)`."""

    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    @property
    def shape(self):
        """The buffer's shape, from the ref's type."""
        return tuple(self.ref.shape)

    @property
    def named_shape(self):
        """{axis name: length}, in axis order."""
        return dict(zip(self.axes, self.shape))

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.ref.dtype

    def tree_flatten(self):
        """The ref is the only leaf; the names are static."""
        return (self.ref,), self.axes

    @classmethod
    def tree_unflatten(cls, axes, children):
        """Rebuild around the given leaf."""
        return cls(children[0], axes)

    def __getitem__(self, sel):
        """Read a selection of the whole buffer: the same as reading it from the whole view."""
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        """Write a selection of the whole buffer."""
        self.slice(...)[sel] = value

    def slice(self, sel):
        """A view of the selection `sel` that refers to this buffer."""
        # TODO: make the view of the whole buffer, then narrow it by `sel`.
        raise NotImplementedError("NamedRef.slice")


class SliceRef:
    """A view of a NamedRef: for each base axis, a fixed int or the positions it keeps."""

    def __init__(self, base, view):
        self.base = base  # the NamedRef
        self.view = tuple(view)  # one entry per base axis; what an entry is, is yours to choose

    @property
    def axes(self):
        """The names of the axes the view keeps, in base order."""
        # TODO
        raise NotImplementedError("SliceRef.axes")

    @property
    def shape(self):
        """The view's shape."""
        # TODO
        raise NotImplementedError("SliceRef.shape")

    @property
    def named_shape(self):
        """{axis name: length} of the view."""
        # TODO
        raise NotImplementedError("SliceRef.named_shape")

    @property
    def dtype(self):
        """The buffer's dtype."""
        # TODO
        raise NotImplementedError("SliceRef.dtype")

    def __getitem__(self, sel):
        """Read the selection `sel` of this view: one load of the base."""
        # TODO: compose `sel` with the view into one index of the base ref; ints as np.int32.
        raise NotImplementedError("SliceRef.__getitem__")

    def __setitem__(self, sel, value):
        """Write the selection `sel` of this view (rules of `_checked_value`): one store, no load."""
        # TODO
        raise NotImplementedError("SliceRef.__setitem__")

    def slice(self, sel):
        """A narrower view that still refers to the base."""
        # TODO
        raise NotImplementedError("SliceRef.slice")

    def value(self):
        """The whole view, read (`self[...]`)."""
        # TODO
        raise NotImplementedError("SliceRef.value")

    def unsliced(self):
        """The NamedRef this view was cut from."""
        # TODO
        raise NotImplementedError("SliceRef.unsliced")


def new_ref(value, axes):
    """A NamedRef over a new `jax.Ref` holding `value`; one name per dimension, no repeats."""
    axes = tuple(axes)
    value = jnp.asarray(value)
    if len(axes) != value.ndim:
        raise ValueError(f"{len(axes)} axis names {axes} for a value with {value.ndim} dimensions")
    if len(set(axes)) != len(axes):
        raise ValueError(f"axis names must differ, got {axes}")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    """The buffer as an array, ending the reference."""
    return jax.freeze(ref.ref)
