"""Ends each base slice just past the view's last position, `slice(at(0), at(length - 1) + 1, step)`, which for an empty selection at the end of an axis starts past the axis (`slice(6, 6)` of 6 layers), and JAX refuses it; must fail test_bounds_clamped."""

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
        whole = tuple(_Axis(n, lambda i: i) for n in self.shape)
        return SliceRef(self, whole).slice(sel)


class _Axis:
    """A kept axis: `length` positions, view position i sitting at base position `at(i)`."""

    def __init__(self, length, at):
        self.length = length
        self.at = at

    def narrowed(self, name, entry):
        """The axis after `entry` (a slice, or an int, which fixes a base position), checked against the view."""
        if isinstance(entry, slice):
            if entry.step is not None and entry.step < 1:
                raise ValueError(f"steps must be 1 or more; axis {name!r} got {entry.step}")
            first, stop, step = entry.indices(self.length)
            count = max(0, -(-(stop - first) // step))
            return _Axis(count, lambda i, at=self.at: at(first + i * step))
        i = operator.index(entry)
        if i < -self.length or i >= self.length:
            raise IndexError(f"index {i} is out of range for axis {name!r} of length {self.length}")
        return self.at(i % self.length)

    def base_index(self):
        """The slice of the base this axis reads: from its first position to just past its last."""
        first = self.at(0)
        step = self.at(1) - first if self.length > 1 else 1
        return slice(first, self.at(self.length - 1) + 1, step)


class SliceRef:
    """A view of a NamedRef: per base axis, a fixed base position (an int) or an `_Axis`."""

    def __init__(self, base, view):
        self.base = base
        self.view = tuple(view)

    @property
    def axes(self):
        """The names of the axes the view keeps."""
        return tuple(name for name, v in zip(self.base.axes, self.view) if isinstance(v, _Axis))

    @property
    def shape(self):
        """The view's shape."""
        return tuple(v.length for v in self.view if isinstance(v, _Axis))

    @property
    def named_shape(self):
        """{axis: length} of the view."""
        return dict(zip(self.axes, self.shape))

    @property
    def dtype(self):
        """The base buffer's dtype."""
        return self.base.dtype

    def _per_axis(self, sel):
        """One entry per kept axis, from a dict, `...` or a positional index."""
        axes = self.axes
        if isinstance(sel, dict):
            unknown = [name for name in sel if name not in axes]
            if unknown:
                gone = unknown[0] in self.base.axes
                raise KeyError(f"axis {unknown[0]!r} is {'fixed by an int' if gone else 'unknown'}; the view keeps "
                               f"{axes}")
            return [sel.get(name, slice(None)) for name in axes]
        items = list(sel) if isinstance(sel, tuple) else [sel]
        dots = [k for k, item in enumerate(items) if item is Ellipsis]
        if len(dots) > 1:
            raise IndexError("only one `...` may appear in an index")
        if dots:
            k = dots[0]
            items[k:k + 1] = [slice(None)] * (len(axes) - len(items) + 1)
        if len(items) > len(axes):
            raise IndexError(f"too many indices ({len(items)}) for a view of {len(axes)} axes")
        return items + [slice(None)] * (len(axes) - len(items))

    def slice(self, sel):
        """A narrower view of the same base."""
        entries = iter(self._per_axis(sel))
        view = [v.narrowed(name, next(entries)) if isinstance(v, _Axis) else v
                for name, v in zip(self.base.axes, self.view)]
        return SliceRef(self.base, view)

    def _index(self):
        """The one index of the base this view reads and writes."""
        return tuple(v.base_index() if isinstance(v, _Axis) else np.int32(v) for v in self.view)

    def __getitem__(self, sel):
        """One load of the selection."""
        return self.base.ref[self.slice(sel)._index()]

    def __setitem__(self, sel, value):
        """One store into the selection, by the given write rules."""
        part = self.slice(sel)
        self.base.ref[part._index()] = _checked_value(value, part.shape, self.dtype, part.axes)

    def value(self):
        """The whole view, read."""
        return self[...]

    def unsliced(self):
        """The NamedRef this view was cut from."""
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
