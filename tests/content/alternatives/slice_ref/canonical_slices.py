"""slice_ref written apart from the reference: a kept axis is a canonical Python slice whose stop is
exact (start + count * step), composed with `slice.indices`; the view's methods are thin, and module
functions do the composing."""

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
        return SliceRef(self, tuple(slice(0, n, 1) for n in self.shape)).slice(sel)


def _count(s):
    """How many positions a canonical slice keeps."""
    return (s.stop - s.start) // s.step


def _as_positional(sel, names):
    """`sel` as one entry per name: a dict by name, `...` and trailing axes whole."""
    if isinstance(sel, dict):
        return tuple(sel.pop(name) if name in sel else slice(None) for name in names), sel
    items = sel if isinstance(sel, tuple) else (sel,)
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index may hold one `...` at most")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(names) + 1 - len(items)) + items[at + 1:]
    if len(items) > len(names):
        raise IndexError(f"{len(items)} entries for the {len(names)} axes {names}")
    return items + (slice(None),) * (len(names) - len(items)), {}


def _narrow(kept, entry, name):
    """A canonical slice narrowed by `entry`: a canonical slice again, or the base position an int picks."""
    count = _count(kept)
    if isinstance(entry, slice):
        if entry.step is not None and entry.step < 1:
            raise ValueError(f"axis {name!r}: a step must be 1 or more, not {entry.step}")
        b, e, u = entry.indices(count)
        n = max(0, (e - b + u - 1) // u)
        start, step = kept.start + b * kept.step, kept.step * u
        return slice(start, start + n * step, step)
    i = operator.index(entry)
    if not -count <= i < count:
        raise IndexError(f"axis {name!r} has {count} positions in this view; {i} is outside it")
    return kept.start + (i % count) * kept.step


def _base_entry(kept):
    """What the base is indexed with for one entry: an int32, or a slice that stays inside the axis."""
    if not isinstance(kept, slice):
        return np.int32(kept)
    n = _count(kept)
    return slice(kept.start, kept.start + (n - 1) * kept.step + 1, kept.step) if n else slice(0, 0)


class SliceRef:
    """A view of a NamedRef: per base axis, a base position (int) or a canonical slice."""

    def __init__(self, base, view):
        self.base = base
        self.view = tuple(view)

    @property
    def axes(self):
        """Names of the axes the view keeps."""
        return tuple(a for a, v in zip(self.base.axes, self.view, strict=True) if isinstance(v, slice))

    @property
    def shape(self):
        """The view's shape."""
        return tuple(_count(v) for v in self.view if isinstance(v, slice))

    @property
    def named_shape(self):
        """{axis: length} of the view."""
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        """The base buffer's dtype."""
        return self.base.dtype

    def slice(self, sel):
        """A narrower view of the same base."""
        entries, extra = _as_positional(dict(sel) if isinstance(sel, dict) else sel, self.axes)
        for name in extra:
            why = "an int of this view removed it" if name in self.base.axes else "there is no such axis"
            raise KeyError(f"axis {name!r} cannot be selected: {why}")
        it = iter(entries)
        return SliceRef(self.base, tuple(_narrow(v, next(it), a) if isinstance(v, slice) else v
                                         for a, v in zip(self.base.axes, self.view, strict=True)))

    def __getitem__(self, sel):
        """Read the selection: one load."""
        return self.base.ref[tuple(map(_base_entry, self.slice(sel).view))]

    def __setitem__(self, sel, value):
        """Write the selection: one store."""
        part = self.slice(sel)
        self.base.ref[tuple(map(_base_entry, part.view))] = _checked_value(value, part.shape, self.dtype, part.axes)

    def value(self):
        """The whole view, read."""
        return self[...]

    def unsliced(self):
        """The base NamedRef."""
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
