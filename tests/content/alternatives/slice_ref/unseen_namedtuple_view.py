"""slice_ref written apart from the reference: a view is a `typing.NamedTuple` (base, view) with methods,
registered as a pytree; each entry an int or a `range` of base positions, selectors read by free functions."""

import operator
from typing import NamedTuple

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
        return dict(zip(self.axes, self.shape, strict=False))

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
        return SliceRef(self, tuple(range(n) for n in self.shape)).slice(sel)


# --- selectors -------------------------------------------------------------------------------

def _as_entry(item, where):
    """An int (as a Python int) or a slice with step >= 1; anything else refused."""
    if isinstance(item, slice):
        if item.step is not None and operator.index(item.step) < 1:
            raise ValueError(f"{where}: steps must be 1 or more, got {item.step}")
        return item
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"{where}: a bool is not an index")
    try:
        return operator.index(item)
    except TypeError:
        raise TypeError(f"{where}: expected an int or a slice, got {item!r}") from None


def _per_view_axis(sel, kept_axes, removed_axes):
    """`sel` as a list with one int or slice per kept axis of the view."""
    n = len(kept_axes)
    if sel is Ellipsis:
        return [slice(None)] * n
    if isinstance(sel, dict):
        out = [slice(None)] * n
        for name, item in sel.items():
            if name in removed_axes:
                raise KeyError(f"axis {name!r} was removed by an int earlier in this view")
            if name not in kept_axes:
                raise KeyError(f"unknown axis {name!r}; the view has axes {tuple(kept_axes)}")
            out[kept_axes.index(name)] = _as_entry(item, f"axis {name!r}")
        return out
    items = sel if isinstance(sel, tuple) else (sel,)
    n_ellipsis = sum(1 for it in items if it is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ellipsis:
        cut = next(i for i, it in enumerate(items) if it is Ellipsis)
        head, tail = items[:cut], items[cut + 1:]
    else:
        head, tail = items, ()
    if len(head) + len(tail) > n:
        raise IndexError(f"too many indices: {len(head) + len(tail)} for a view of {n} axes "
                         f"{tuple(kept_axes)}")
    middle = [slice(None)] * (n - len(head) - len(tail))
    entries = list(head) + middle + list(tail)
    return [_as_entry(it, f"position {i}") for i, it in enumerate(entries)]


def _narrow(r, item, name):
    """Apply an int or slice to the progression `r`, as NumPy would on a view of length len(r)."""
    if isinstance(item, slice):
        return r[item]
    if not -len(r) <= item < len(r):
        raise IndexError(f"index {item} is out of range for axis {name!r} of length {len(r)}")
    return r[item]


def _to_base_index(view):
    """One positional index of the base ref: np.int32 for fixed ints, a stepped slice for ranges."""
    index = []
    for e in view:
        if isinstance(e, range):
            if len(e) == 0:
                index.append(slice(0, 0))
            else:
                index.append(slice(e.start, e[-1] + 1, e.step))
        else:
            index.append(np.int32(e))
    return tuple(index)


# --- the view --------------------------------------------------------------------------------

class _SliceRefFields(NamedTuple):
    base: NamedRef
    view: tuple


class SliceRef(_SliceRefFields):
    """A view of a NamedRef: for each base axis, a fixed int or the range of positions it keeps."""

    __slots__ = ()

    def __new__(cls, base, view):
        return super().__new__(cls, base, tuple(view))

    def __repr__(self):
        return f"SliceRef(axes={self.axes}, view={self.view})"

    @property
    def axes(self):
        """The names of the axes the view keeps, in base order."""
        return tuple(a for a, e in zip(self.base.axes, self.view, strict=False) if isinstance(e, range))

    @property
    def _removed(self):
        return tuple(a for a, e in zip(self.base.axes, self.view, strict=False) if not isinstance(e, range))

    @property
    def shape(self):
        """The view's shape."""
        return tuple(len(e) for e in self.view if isinstance(e, range))

    @property
    def named_shape(self):
        """{axis name: length} of the view."""
        return dict(zip(self.axes, self.shape, strict=False))

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.base.dtype

    def slice(self, sel):
        """A narrower view that still refers to the base."""
        kept = self.axes
        items = iter(_per_view_axis(sel, kept, self._removed))
        new = []
        for name, e in zip(self.base.axes, self.view, strict=False):
            new.append(_narrow(e, next(items), name) if isinstance(e, range) else e)
        return SliceRef(self.base, new)

    def __getitem__(self, sel):
        """Read the selection `sel` of this view: one load of the base."""
        return self.slice(sel).value()

    def __setitem__(self, sel, value):
        """Write the selection `sel` of this view (rules of `_checked_value`): one store, no load."""
        target = self.slice(sel)
        self.base.ref[_to_base_index(target.view)] = _checked_value(
            value, target.shape, target.dtype, target.axes)

    def value(self):
        """The whole view, read (`self[...]`)."""
        return self.base.ref[_to_base_index(self.view)]

    def unsliced(self):
        """The NamedRef this view was cut from."""
        return self.base


# The NamedTuple's own pytree handling would make the ranges leaves: keep them static instead.
tree_util.register_pytree_node(
    SliceRef,
    lambda s: ((s.base,), s.view),
    lambda view, children: SliceRef(children[0], view),
)


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
