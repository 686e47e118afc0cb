"""named_ref in the style of the Pallas docs: every index is a `pl.ds`, and ints are reshaped away."""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


@jax.tree_util.register_pytree_node_class
class NamedRef:
    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    @property
    def shape(self):
        return tuple(self.ref.shape)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.ref.dtype

    def tree_flatten(self):
        return (self.ref,), self.axes

    @classmethod
    def tree_unflatten(cls, axes, children):
        return cls(children[0], axes)

    def _plan(self, sel):
        """(index of pl.ds, the selection's axes, its shape)."""
        sel = {} if sel is Ellipsis else sel
        for name in sel:
            if name not in self.axes:
                raise ValueError(f"unknown axis {name!r}")
        index, kept, shape = [], [], []
        for name, n in zip(self.axes, self.shape, strict=True):
            pick = sel.get(name, slice(None))
            if isinstance(pick, slice):
                start, stop, step = pick.indices(n)
                size = max(0, math.ceil((stop - start) / step))
                index.append(pl.ds(start, size, step))
                kept.append(name)
                shape.append(size)
            else:
                index.append(pl.ds(pick % n, 1))  # a width-1 window, squeezed after the load
        return tuple(index), tuple(kept), tuple(shape)

    def __getitem__(self, sel):
        index, _, shape = self._plan(sel)
        return self.ref[index].reshape(shape)

    def __setitem__(self, sel, value):
        index, kept, shape = self._plan(sel)
        value = jnp.asarray(value, self.dtype)
        if value.ndim == 0:
            value = jnp.full(shape, value, self.dtype)
        if value.shape != shape:
            raise ValueError(f"need shape {shape} for axes {kept}, got {value.shape}")
        self.ref[index] = value.reshape([d.size for d in index])


def new_ref(value, axes):
    value = jnp.asarray(value)
    if value.ndim != len(axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axes {tuple(axes)} do not match a value of {value.ndim} dimensions")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
