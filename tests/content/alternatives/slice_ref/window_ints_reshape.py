"""A correct `slice_ref` that indexes the base with windows only: an int becomes a window of width 1
(`pl.ds(i, 1)`), the load has shape (3, 2, 1) for a (3, 2) view and is reshaped afterwards, and a
write reshapes its value to the window. It moves exactly the view's elements, as the lesson allows."""

import operator

import jax
import jax.numpy as jnp
from jax import tree_util
from jax.experimental import pallas as pl


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
        """Read a selection of the whole buffer."""
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        """Write a selection of the whole buffer."""
        self.slice(...)[sel] = value

    def slice(self, sel):
        """A view of the selection `sel` that refers to this buffer."""
        return SliceRef(self, tuple(range(n) for n in self.shape)).slice(sel)


class SliceRef:
    """A view of a NamedRef: per base axis, an int (the axis is gone) or the range it keeps."""

    def __init__(self, base, view):
        self.base = base
        self.view = tuple(view)

    @property
    def axes(self):
        """The names of the axes the view keeps, in base order."""
        return tuple(a for a, v in zip(self.base.axes, self.view, strict=True) if isinstance(v, range))

    @property
    def shape(self):
        """The view's shape."""
        return tuple(len(v) for v in self.view if isinstance(v, range))

    @property
    def named_shape(self):
        """{axis name: length} of the view."""
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.base.dtype

    def _entries(self, sel):
        """One int or slice per axis of the view, from a dict, `...` or a positional index."""
        axes = self.axes
        if isinstance(sel, dict):
            for name in sel:
                if name not in axes:
                    why = "an int earlier in this view removed it" if name in self.base.axes else "no such axis"
                    raise KeyError(f"cannot select axis {name!r} ({why}); this view has axes {axes}")
            return tuple(sel.get(name, slice(None)) for name in axes)
        items = sel if isinstance(sel, tuple) else (sel,)
        if items.count(Ellipsis) > 1:
            raise IndexError("an index can hold only one `...`")
        if Ellipsis in items:
            k = items.index(Ellipsis)
            items = items[:k] + (slice(None),) * (len(axes) - len(items) + 1) + items[k + 1:]
        if len(items) > len(axes):
            raise IndexError(f"{len(items)} indices for a view with {len(axes)} axes {axes}")
        return items + (slice(None),) * (len(axes) - len(items))

    def _compose(self, sel):
        """The base entries of this view narrowed by `sel`."""
        entries = iter(self._entries(sel))
        view = []
        for name, kept in zip(self.base.axes, self.view, strict=True):
            if isinstance(kept, range):
                entry = next(entries)
                if isinstance(entry, slice):
                    if entry.step is not None and entry.step < 1:
                        raise ValueError(f"the step of axis {name!r} must be 1 or more, got {entry.step}")
                    kept = kept[entry]
                else:
                    i = operator.index(entry)
                    if not -len(kept) <= i < len(kept):
                        raise IndexError(f"index {i} is out of range for axis {name!r} of length {len(kept)}")
                    kept = kept[i]
            view.append(kept)
        return tuple(view)

    def _index(self, view):
        """One index of the base made of windows: `pl.ds(i, 1)` for an int, `pl.ds(start, size, stride)` else."""
        # An empty range is `pl.ds(0, 0)`: JAX refuses a ref slice that starts past the end of its axis.
        return tuple(pl.ds(v, 1) if isinstance(v, int) else pl.ds(v.start, len(v), v.step) if len(v) else pl.ds(0, 0)
                     for v in view)

    def __getitem__(self, sel):
        """Read the selection `sel` of this view: one load."""
        part = SliceRef(self.base, self._compose(sel))
        return self.base.ref[self._index(part.view)].reshape(part.shape)

    def __setitem__(self, sel, value):
        """Write the selection `sel` of this view: one store, no load."""
        part = SliceRef(self.base, self._compose(sel))
        window = tuple(1 if isinstance(v, int) else len(v) for v in part.view)
        value = _checked_value(value, part.shape, self.dtype, part.axes)
        self.base.ref[self._index(part.view)] = value.reshape(window)

    def slice(self, sel):
        """A narrower view that still refers to the base."""
        return SliceRef(self.base, self._compose(sel))

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
