"""Broadcasts every written value to the selection, so a wrong shape that broadcasts is accepted; must fail test_mismatched_write_refused."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import GetAttrKey, register_pytree_with_keys


def _entry(x):
    return np.int32(x) if isinstance(x, int) else x


class NamedRef:
    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    shape = property(lambda self: tuple(self.ref.shape))
    named_shape = property(lambda self: dict(zip(self.axes, self.shape)))
    dtype = property(lambda self: self.ref.dtype)

    def _index(self, sel):
        if sel is Ellipsis:
            sel = {}
        stray = set(sel) - set(self.axes)
        if stray:
            raise KeyError(f"axes {sorted(stray)} are not among {self.axes}")
        return tuple(map(lambda name: _entry(sel.get(name, slice(None))), self.axes))

    def __getitem__(self, sel):
        return self.ref[self._index(sel)]

    def __setitem__(self, sel, value):
        index = self._index(sel)
        named = {a: len(range(n)[s]) for a, n, s in zip(self.axes, self.shape, index) if isinstance(s, slice)}
        shape = tuple(named.values())
        try:
            value = jnp.broadcast_to(jnp.asarray(value, dtype=self.dtype), shape)
        except ValueError:
            raise ValueError(f"value of shape {jnp.shape(value)} for selection {named}") from None
        self.ref[index] = value


register_pytree_with_keys(
    NamedRef,
    lambda r: (((GetAttrKey("ref"), r.ref),), r.axes),
    lambda axes, children: NamedRef(children[0], axes),
    lambda r: ((r.ref,), r.axes),
)


def new_ref(value, axes):
    value = jnp.asarray(value)
    if len(axes) != value.ndim:
        raise ValueError("one name per dimension")
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis name")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
