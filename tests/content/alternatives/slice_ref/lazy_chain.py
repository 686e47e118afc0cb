"""A correct `slice_ref` that keeps each view lazily, as its parent and the selector that narrowed
it; an index of the base is worked out only when the view is read or written, by walking the
chain from the base with one `range` per axis."""


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
        return SliceRef(self, (sel,))


def _positional(sel, axes):
    """One int or slice per axis of `axes`, from a dict, `...` or a positional index."""
    if isinstance(sel, dict):
        for name in sel:
            if name not in axes:
                raise KeyError(f"axis {name!r} is not in this view (its axes are {axes})")
        return [sel.get(name, slice(None)) for name in axes]
    items = list(sel) if isinstance(sel, tuple) else [sel]
    if items.count(...) > 1:
        raise IndexError("only one ... per index")
    if ... in items:
        at = items.index(...)
        items[at:at + 1] = [slice(None)] * (len(axes) - len(items) + 1)
    if len(items) > len(axes):
        raise IndexError(f"too many indices for the axes {axes}")
    return items + [slice(None)] * (len(axes) - len(items))


def _narrow(kept, sel, names):
    """`kept` (per base axis a range, or an int once removed) narrowed by one selector."""
    live = [name for name, k in zip(names, kept, strict=True) if isinstance(k, range)]
    entries = iter(_positional(sel, tuple(live)))
    out = []
    for name, k in zip(names, kept, strict=True):
        if not isinstance(k, range):
            out.append(k)
            continue
        entry = next(entries)
        if isinstance(entry, slice):
            if (entry.step or 1) < 1:
                raise ValueError(f"steps must be 1 or more (axis {name!r})")
            out.append(k[entry])
        else:
            if not -len(k) <= entry < len(k):
                raise IndexError(f"{entry} is outside axis {name!r} of length {len(k)}")
            out.append(k[entry])
    return out


class SliceRef:
    """A view: the base NamedRef and the chain of selectors that led here."""

    def __init__(self, base, view):
        self.base = base
        self.view = tuple(view)  # the selectors, outermost first
        self._kept = [range(n) for n in base.shape]
        for sel in self.view:
            self._kept = _narrow(self._kept, sel, base.axes)  # checked now, so a bad view fails at once

    @property
    def axes(self):
        return tuple(a for a, k in zip(self.base.axes, self._kept, strict=True) if isinstance(k, range))

    @property
    def shape(self):
        return tuple(len(k) for k in self._kept if isinstance(k, range))

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.base.dtype

    def _index(self, sel):
        """The base index of this view narrowed by `sel`, and the selection's axes and shape."""
        kept = _narrow(self._kept, sel, self.base.axes)
        # An empty range is `slice(0, 0)`: JAX refuses a ref slice that starts past the end of its axis.
        index = tuple((slice(k.start, k.start + k.step * (len(k) - 1) + 1, k.step) if len(k) else slice(0, 0))
                      if isinstance(k, range) else np.int32(k) for k in kept)
        axes = tuple(a for a, k in zip(self.base.axes, kept, strict=True) if isinstance(k, range))
        return index, axes, tuple(len(k) for k in kept if isinstance(k, range))

    def __getitem__(self, sel):
        return self.base.ref[self._index(sel)[0]]

    def __setitem__(self, sel, value):
        index, axes, shape = self._index(sel)
        self.base.ref[index] = _checked_value(value, shape, self.dtype, axes)

    def slice(self, sel):
        return SliceRef(self.base, self.view + (sel,))

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
