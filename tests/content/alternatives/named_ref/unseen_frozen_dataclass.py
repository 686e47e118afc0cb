"""named_ref written apart from the reference: a frozen dataclass registered with `register_dataclass`, the
names a static field; ints become non-negative `np.int32` in one index built in the axes' order."""

import dataclasses
import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


def _normalize_slice(s, n):
    """A slice with non-negative start/stop and step >= 1, safe under jax.jit."""
    if s.step is not None and s.step < 1:
        raise ValueError(f"slice steps must be 1 or more, got {s!r}")
    start, stop, step = s.indices(n)
    length = len(range(start, stop, step))
    if length == 0:
        # An empty strided slice trips JAX under jit; an empty unit slice does not.
        return slice(0, 0, 1), 0
    return slice(start, stop, step), length


@tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, eq=False)
class NamedRef:
    """A `jax.Ref` whose axes have names; index it with `...` or a dict {axis: int | slice}."""

    ref: jax.Ref
    axes: tuple = dataclasses.field(metadata=dict(static=True))

    def __post_init__(self):
        object.__setattr__(self, "axes", tuple(self.axes))

    @property
    def shape(self):
        """The buffer's shape, as a tuple of ints (from the ref's type: no load)."""
        return tuple(int(d) for d in self.ref.shape)

    @property
    def named_shape(self):
        """{axis name: length}, in axis order."""
        return dict(zip(self.axes, self.shape, strict=False))

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.ref.dtype

    def _index(self, sel):
        """(positional index, kept axes, selection shape) for `sel`."""
        if sel is Ellipsis:
            sel = {}
        if not isinstance(sel, dict):
            raise TypeError(f"select with ... or a dict {{axis: int | slice}}, got {sel!r}")
        unknown = [k for k in sel if k not in self.axes]
        if unknown:
            raise KeyError(f"unknown axis {unknown[0]!r}; the axes are {self.axes}")
        index, kept, sel_shape = [], [], []
        for axis, n in zip(self.axes, self.shape, strict=False):
            s = sel.get(axis, slice(None))
            if isinstance(s, slice):
                s, length = _normalize_slice(s, n)
                index.append(s)
                kept.append(axis)
                sel_shape.append(length)
            else:
                if isinstance(s, (bool, np.bool_)):
                    raise TypeError(f"axis {axis!r}: expected an int or a slice, got {s!r}")
                try:
                    i = operator.index(s)
                except TypeError as e:
                    raise TypeError(f"axis {axis!r}: expected an int or a slice, got {s!r}") from e
                if not -n <= i < n:
                    raise IndexError(f"index {s!r} out of range for axis {axis!r} of length {n}")
                # A NumPy int, not a Python int: JAX 0.10 refuses Python ints next to strided
                # slices under jit.
                index.append(np.int32(i % n))
        return tuple(index), tuple(kept), tuple(sel_shape)

    def __getitem__(self, sel):
        """Read the selection `sel`: one load of just the selected elements."""
        index, _, _ = self._index(sel)
        return self.ref[index]

    def __setitem__(self, sel, value):
        """Write `value` into the selection: cast, fill a scalar, refuse other shapes; one store."""
        index, kept, sel_shape = self._index(sel)
        value = jnp.asarray(value, dtype=self.dtype)
        if value.ndim == 0:
            value = jnp.broadcast_to(value, sel_shape)
        elif tuple(value.shape) != sel_shape:
            raise ValueError(
                f"a value of shape {tuple(value.shape)} for the selection over {kept}, "
                f"of shape {sel_shape}"
            )
        self.ref[index] = value


def new_ref(value, axes):
    """A NamedRef over a new `jax.Ref` holding `value`; one name per dimension, no repeats."""
    value = jnp.asarray(value)
    axes = tuple(axes)
    if len(axes) != value.ndim:
        raise ValueError(f"{len(axes)} axis names {axes} for a value of {value.ndim} dimensions")
    if len(set(axes)) != len(axes):
        dup = sorted({a for a in axes if axes.count(a) > 1})
        raise ValueError(f"repeated axis names {dup} in {axes}")
    if not all(isinstance(a, str) for a in axes):
        raise ValueError(f"axis names must be strings, got {axes}")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    """The buffer as an array, ending the reference (with `jax.freeze`)."""
    return jax.freeze(ref.ref if isinstance(ref, NamedRef) else ref)
