"""Builds each view with `ref.at[...]`, which JAX implements only under jit, so eager use fails; must fail test_lesson_examples."""

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


def _positional(sel, axes):
    """One int or slice per axis."""
    if sel is Ellipsis:
        return (slice(None),) * len(axes)
    if isinstance(sel, dict):
        for name in sel:
            if name not in axes:
                raise KeyError(f"no axis {name!r} in {axes}")
        return tuple(sel.get(a, slice(None)) for a in axes)
    items = sel if isinstance(sel, tuple) else (sel,)
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items = items[:k] + (slice(None),) * (len(axes) - len(items) + 1) + items[k + 1:]
    return items + (slice(None),) * (len(axes) - len(items))


def _check_ints(index, shape, axes):
    for i, n, a in zip(index, shape, axes):
        if not isinstance(i, slice) and not -n <= i < n:
            raise IndexError(f"index {i} out of range for axis {a!r} of length {n}")
    return tuple(i if isinstance(i, slice) else np.int32(i % n) for i, n in zip(index, shape))


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
        """Read a selection of the whole buffer."""
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        """Write a selection of the whole buffer."""
        self.slice(...)[sel] = value

    def slice(self, sel):
        """A view of the selection `sel` that refers to this buffer."""
        return SliceRef(self, (self.ref, self.axes)).slice(sel)


class SliceRef:
    """A view: a sub-ref made with `.at[...]` and the names of its axes."""

    def __init__(self, base, view):
        self.base = base
        self.view = view

    @property
    def axes(self):
        return self.view[1]

    @property
    def shape(self):
        return tuple(self.view[0].shape)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape))

    @property
    def dtype(self):
        return self.base.dtype

    def _narrow(self, sel):
        index = _check_ints(_positional(sel, self.axes), self.shape, self.axes)
        axes = tuple(a for a, i in zip(self.axes, index) if isinstance(i, slice))
        return self.view[0].at[index], axes

    def __getitem__(self, sel):
        return self._narrow(sel)[0][...]

    def __setitem__(self, sel, value):
        ref, axes = self._narrow(sel)
        ref[...] = _checked_value(value, ref.shape, self.dtype, axes)

    def slice(self, sel):
        return SliceRef(self.base, self._narrow(sel))

    def value(self):
        return self[...]

    def unsliced(self):
        return self.base


def new_ref(value, axes):
    """A NamedRef over a new `jax.Ref` holding `value`; one name per dimension, no repeats."""
    axes = tuple(axes)
    value = jnp.asarray(value)
    if len(axes) != value.ndim or len(set(axes)) != len(axes):
        raise ValueError(f"axis names {axes} do not fit a value with {value.ndim} dimensions")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    """The buffer as an array, ending the reference."""
    return jax.freeze(ref.ref)
