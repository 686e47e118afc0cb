"""A correct `slice_ref` whose views are frozen dataclasses registered as pytrees (the base ref is
their only leaf, the per-axis entries are static), so a view itself can be passed into `jax.jit`;
each kept axis is a `(start, length, step)` triple composed by hand."""


import dataclasses
import functools

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
        return dict(zip(self.axes, self.shape, strict=True))

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
        return SliceRef(self, tuple((0, n, 1) for n in self.shape)).slice(sel)


def _take(start, length, step, s):
    """The triple `(start, length, step)` narrowed by the slice `s`, bounds clamped as NumPy does."""
    lo, hi, by = s.indices(length)
    if by < 1:
        raise ValueError("steps must be 1 or more")
    count = max(0, -(-(hi - lo) // by))
    return (start + lo * step, count, step * by)


def _pick(start, length, step, i, name):
    """The base position of view position `i` (negatives from the end), or IndexError."""
    if not -length <= i < length:
        raise IndexError(f"index {i} is out of range for axis {name!r} of length {length}")
    return start + (i % length) * step


@functools.partial(jax.tree_util.register_dataclass, data_fields=["base"], meta_fields=["view"])
@dataclasses.dataclass(frozen=True)
class SliceRef:
    """A view: per base axis, an int (the axis is gone) or a (start, length, step) triple."""

    base: NamedRef
    view: tuple

    @property
    def axes(self):
        return tuple(a for a, v in zip(self.base.axes, self.view, strict=True) if isinstance(v, tuple))

    @property
    def shape(self):
        return tuple(v[1] for v in self.view if isinstance(v, tuple))

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.base.dtype

    def _entries(self, sel):
        axes = self.axes
        if isinstance(sel, dict):
            stray = [name for name in sel if name not in axes]
            if stray:
                raise KeyError(f"the view has no axis {stray[0]!r}; its axes are {axes}")
            return [sel.get(a, slice(None)) for a in axes]
        items = list(sel) if isinstance(sel, tuple) else [sel]
        if ... in items:
            if items.count(...) > 1:
                raise IndexError("an index can hold one `...` only")
            at = items.index(...)
            items[at:at + 1] = [slice(None)] * (len(axes) + 1 - len(items))
        if len(items) > len(axes):
            raise IndexError(f"{len(items)} indices for {len(axes)} axes")
        return items + [slice(None)] * (len(axes) - len(items))

    def _compose(self, sel):
        entries = iter(self._entries(sel))
        out = []
        for name, v in zip(self.base.axes, self.view, strict=True):
            if not isinstance(v, tuple):
                out.append(v)
                continue
            e = next(entries)
            out.append(_take(*v, e) if isinstance(e, slice) else _pick(*v, e, name))
        return tuple(out)

    @staticmethod
    def _index(view):
        # An empty selection is `slice(0, 0)`: JAX refuses a ref slice that starts past the end of its axis.
        return tuple((slice(v[0], v[0] + (v[1] - 1) * v[2] + 1, v[2]) if v[1] else slice(0, 0))
                     if isinstance(v, tuple) else np.int32(v) for v in view)

    def __getitem__(self, sel):
        return self.base.ref[self._index(self._compose(sel))]

    def __setitem__(self, sel, value):
        part = SliceRef(self.base, self._compose(sel))
        self.base.ref[self._index(part.view)] = _checked_value(value, part.shape, self.dtype, part.axes)

    def slice(self, sel):
        return SliceRef(self.base, self._compose(sel))

    def value(self):
        return self[...]

    def unsliced(self):
        return self.base


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
