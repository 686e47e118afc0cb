"""slice_ref that keeps, per base axis, a NumPy array of positions and lets NumPy index it."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


def _checked_value(value, shape, dtype, axes):
    value = jnp.asarray(value, dtype)
    if value.ndim == 0:
        return jnp.broadcast_to(value, shape)
    if value.shape != tuple(shape):
        raise ValueError(f"cannot store shape {value.shape} in the selection {dict(zip(axes, shape, strict=True))}")
    return value


@tree_util.register_pytree_node_class
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

    def __getitem__(self, sel):
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        self.slice(...)[sel] = value

    def slice(self, sel):
        return SliceRef(self, tuple(np.arange(n) for n in self.shape)).slice(sel)


@dataclasses.dataclass(frozen=True)
class SliceRef:
    """Per base axis: a 0-d array (a fixed position) or a 1-d array of the positions kept."""

    base: NamedRef
    view: tuple

    @property
    def axes(self):
        return tuple(a for a, p in zip(self.base.axes, self.view, strict=True) if p.ndim)

    @property
    def shape(self):
        return tuple(p.size for p in self.view if p.ndim)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.base.dtype

    def _items(self, sel):
        n = len(self.axes)
        if isinstance(sel, dict):
            for key in sel:
                if key not in self.axes:
                    raise ValueError(f"axis {key!r} is not in this view ({', '.join(self.axes) or 'no axes'})")
            return [sel.get(a, slice(None)) for a in self.axes]
        items = list(sel) if isinstance(sel, tuple) else [sel]
        if items.count(...) > 1:
            raise IndexError("only one ellipsis is allowed")
        if ... in items:
            i = items.index(...)
            items = items[:i] + [slice(None)] * (n - len(items) + 1) + items[i + 1:]
        if len(items) > n:
            raise IndexError(f"{len(items)} indices for {n} axes")
        return items + [slice(None)] * (n - len(items))

    def slice(self, sel):
        items = iter(self._items(sel))
        view = []
        for name, positions in zip(self.base.axes, self.view, strict=True):
            if positions.ndim:
                item = next(items)
                if isinstance(item, slice) and (item.step or 1) < 1:
                    raise ValueError(f"step of {name!r} must be at least 1")
                if not isinstance(item, slice) and not -positions.size <= item < positions.size:
                    raise IndexError(f"{name} index {item} is out of range for this view of {positions.size}")
                positions = np.asarray(positions[item])
            view.append(positions)
        return SliceRef(self.base, tuple(view))

    def _index(self):
        index = []
        for p in self.view:
            if p.ndim == 0:
                index.append(np.int32(p))
            elif p.size == 0:  # JAX refuses a ref slice that starts past the end of its axis, even an empty one
                index.append(slice(0, 0))
            elif p.size == 1:
                index.append(slice(int(p[0]), int(p[0]) + 1))
            else:
                index.append(slice(int(p[0]), int(p[-1]) + 1, int(p[1] - p[0])))
        return tuple(index)

    def __getitem__(self, sel):
        return self.base.ref[self.slice(sel)._index()]

    def __setitem__(self, sel, value):
        part = self.slice(sel)
        self.base.ref[part._index()] = _checked_value(value, part.shape, self.dtype, part.axes)

    def value(self):
        return self[...]

    def unsliced(self):
        return self.base


def new_ref(value, axes):
    value = jnp.asarray(value)
    if len(axes) != value.ndim:
        raise ValueError("one axis name per dimension")
    if len(set(axes)) < len(axes):
        raise ValueError("axis names repeat")
    return NamedRef(jax.new_ref(value), tuple(axes))


def freeze(ref):
    return jax.freeze(ref.ref)
