"""slice_ref written apart from the reference: a frozen `register_dataclass` view whose entries are an int or an
`Axis(start, count, step)`, every clamp, wrap and bounds check computed by hand (no `range`, no `slice.indices`)."""

import dataclasses

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
        return SliceRef(self, _whole(self.shape)).slice(sel)


@dataclasses.dataclass(frozen=True)
class Axis:
    """Base positions start, start + step, ..., count of them."""

    start: int
    count: int
    step: int

    def pick(self, i, name):
        """The base position of the view's element `i` (negatives from the view's end)."""
        if i < -self.count or i >= self.count:
            raise IndexError(f"index {i} is out of range for axis {name!r} of length {self.count}")
        if i < 0:
            i += self.count
        return self.start + i * self.step

    def cut(self, start, stop, step, name):
        """The sub-progression NumPy's `view[start:stop:step]` keeps, clamped to this view."""
        n = self.count
        step = 1 if step is None else _int(step, name)
        if step < 1:
            raise ValueError(f"axis {name!r}: steps must be 1 or more, got {step}")
        lo = 0 if start is None else _int(start, name)
        hi = n if stop is None else _int(stop, name)
        if lo < 0:
            lo += n
        if hi < 0:
            hi += n
        lo = min(max(lo, 0), n)
        hi = min(max(hi, 0), n)
        count = max(0, -(-(hi - lo) // step))
        return Axis(self.start + lo * self.step, count, self.step * step)

    def as_slice(self):
        """A stepped slice of the base axis selecting exactly these positions."""
        if self.count == 0:
            return slice(0, 0)
        return slice(self.start, self.start + (self.count - 1) * self.step + 1, self.step)


def _int(x, name):
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"axis {name!r}: a bool is not an index")
    try:
        return x.__index__()
    except AttributeError:
        raise TypeError(f"axis {name!r}: expected an int or a slice, got {x!r}") from None


def _named(sel, names, gone):
    """{view axis name: int | slice} for any selector form, only the axes it touches."""
    if sel is ...:
        return {}
    if isinstance(sel, dict):
        for name in sel:
            if name in gone:
                raise ValueError(f"axis {name!r} was removed by an int; it cannot be indexed again")
            if name not in names:
                raise KeyError(f"no axis {name!r} in view with axes {names}")
        return dict(sel)
    items = list(sel) if isinstance(sel, tuple) else [sel]
    dots = [k for k, it in enumerate(items) if it is ...]
    if len(dots) > 1:
        raise IndexError("at most one '...' in an index")
    if dots:
        before, after = items[:dots[0]], items[dots[0] + 1:]
    else:
        before, after = items, []
    if len(before) + len(after) > len(names):
        raise IndexError(f"{len(before) + len(after)} indices for {len(names)} axes {names}")
    out = dict(zip(names, before, strict=False))
    if after:
        out.update(zip(names[len(names) - len(after):], after, strict=False))
    return out


@dataclasses.dataclass(frozen=True)
class SliceRef:
    """A view of a NamedRef: for each base axis, a fixed int or an `Axis` progression."""

    base: NamedRef
    view: tuple

    def __post_init__(self):
        object.__setattr__(self, "view", tuple(self.view))

    @property
    def axes(self):
        """The names of the axes the view keeps, in base order."""
        return tuple(n for n, e in zip(self.base.axes, self.view, strict=False) if isinstance(e, Axis))

    @property
    def shape(self):
        """The view's shape."""
        return tuple(e.count for e in self.view if isinstance(e, Axis))

    @property
    def named_shape(self):
        """{axis name: length} of the view."""
        return {n: e.count for n, e in zip(self.base.axes, self.view, strict=False) if isinstance(e, Axis)}

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.base.dtype

    def _index(self):
        return tuple(e.as_slice() if isinstance(e, Axis) else np.int32(e) for e in self.view)

    def slice(self, sel):
        """A narrower view that still refers to the base."""
        gone = tuple(n for n, e in zip(self.base.axes, self.view, strict=False) if not isinstance(e, Axis))
        picks = _named(sel, self.axes, gone)
        new = []
        for name, e in zip(self.base.axes, self.view, strict=False):
            if not isinstance(e, Axis) or name not in picks:
                new.append(e)
                continue
            p = picks[name]
            if isinstance(p, slice):
                new.append(e.cut(p.start, p.stop, p.step, name))
            else:
                new.append(e.pick(_int(p, name), name))
        return SliceRef(self.base, tuple(new))

    def __getitem__(self, sel):
        """Read the selection `sel` of this view: one load of the base."""
        return self.slice(sel).value()

    def __setitem__(self, sel, value):
        """Write the selection `sel` of this view (rules of `_checked_value`): one store, no load."""
        part = self.slice(sel)
        value = _checked_value(value, part.shape, part.dtype, part.axes)
        self.base.ref[part._index()] = value

    def value(self):
        """The whole view, read (`self[...]`)."""
        return self.base.ref[self._index()]

    def unsliced(self):
        """The NamedRef this view was cut from."""
        return self.base


tree_util.register_dataclass(SliceRef, data_fields=["base"], meta_fields=["view"])


def _whole(shape):
    return tuple(Axis(0, n, 1) for n in shape)

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
