"""named_ref as a plain class with `__slots__`, registered by `register_pytree_node` from class methods;
selectors are any Mapping, ints are passed as `jnp.int32`, and the scalar fill is `jnp.full`."""

from collections.abc import Mapping

import jax
import jax.numpy as jnp
from jax import tree_util


class NamedRef:
    __slots__ = ("ref", "axes")

    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    shape = property(lambda self: tuple(self.ref.shape))
    dtype = property(lambda self: self.ref.dtype)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @classmethod
    def _flatten(cls, r):
        return [r.ref], r.axes

    @classmethod
    def _unflatten(cls, axes, leaves):
        return cls(leaves[0], axes)

    def _selection(self, sel):
        """(positional index, kept axes, kept shape)."""
        if sel is Ellipsis:
            sel = {}
        if not isinstance(sel, Mapping):
            raise TypeError(f"select with ... or a dict of axis names, not {type(sel).__name__}")
        for name in sel:
            if name not in self.axes:
                raise ValueError(f"unknown axis {name!r} (axes are {self.axes})")
        index, kept, shape = [], [], []
        for name, n in zip(self.axes, self.shape, strict=True):
            entry = sel.get(name, slice(None))
            if isinstance(entry, slice):
                start, stop, step = entry.indices(n)
                index.append(slice(start, stop, step))
                kept.append(name)
                shape.append(len(range(start, stop, step)))
            else:
                index.append(jnp.int32(entry % n))
        return tuple(index), tuple(kept), tuple(shape)

    def __getitem__(self, sel):
        index, _, _ = self._selection(sel)
        return self.ref[index]

    def __setitem__(self, sel, value):
        index, kept, shape = self._selection(sel)
        if jnp.ndim(value) == 0:
            value = jnp.full(shape, value, self.dtype)
        else:
            value = jnp.asarray(value, self.dtype)
            if value.shape != shape:
                raise ValueError(f"shape {value.shape} != {shape}, the selection over axes {kept}")
        self.ref[index] = value


tree_util.register_pytree_node(NamedRef, NamedRef._flatten, NamedRef._unflatten)


def new_ref(value, axes):
    value = jnp.asarray(value)
    if value.ndim != len(axes) or len(set(axes)) != len(axes):
        raise ValueError(f"need {value.ndim} distinct axis names, got {tuple(axes)}")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
