"""Registers the axis names as a data field of the dataclass, so they become pytree leaves; must fail test_pytree."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np


@functools.partial(jax.tree_util.register_dataclass, data_fields=["ref", "axes"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class NamedRef:
    """A jax.Ref with axis names."""

    ref: jax.Ref
    axes: tuple

    @property
    def shape(self):
        return self.ref.shape

    @property
    def named_shape(self):
        return {name: n for name, n in zip(self.axes, self.ref.shape)}

    @property
    def dtype(self):
        return self.ref.dtype

    def _index(self, sel):
        index = [slice(None)] * len(self.axes)
        if sel is ...:
            return tuple(index)
        for name, entry in sel.items():
            if name not in self.axes:
                raise ValueError(f"unknown axis {name}")
            position = self.axes.index(name)
            index[position] = np.int32(entry) if isinstance(entry, int) else entry
        return tuple(index)

    def __getitem__(self, sel):
        return self.ref[self._index(sel)]

    def __setitem__(self, sel, value):
        index = self._index(sel)
        # The selection's shape, from a zero-size NumPy stand-in of the buffer (no data moves).
        target = np.broadcast_to(np.float32(0), self.shape)[index].shape
        kept = [name for name, entry in zip(self.axes, index) if isinstance(entry, slice)]
        value = jnp.asarray(value).astype(self.dtype)
        if value.shape == ():
            value = jnp.full(target, value, self.dtype)
        if value.shape != target:
            raise ValueError(f"shape {value.shape} does not fit the selection {dict(zip(kept, target))}")
        self.ref[index] = value


def new_ref(value, axes):
    axes = tuple(axes)
    if len(axes) != jnp.ndim(value) or len(set(axes)) < len(axes):
        raise ValueError(f"bad axes {axes} for a value of shape {jnp.shape(value)}")
    return NamedRef(jax.new_ref(jnp.asarray(value)), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
