"""named_ref written apart from the reference: `register_pytree_node(NamedRef, _flatten, _unflatten)` with
module-level functions; one comprehension over the axes, `range(n)[k]` normalising ints and slices."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

_WHOLE = slice(None)


def _check_key(axis, k):
    if isinstance(k, slice):
        if k.step is not None and k.step <= 0:
            raise ValueError(f"axis {axis!r}: step must be 1 or more, got {k.step}")
        return k
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"axis {axis!r}: expected an int or a slice, got {type(k).__name__}")
    return k


def _positional(k, n):
    """One positional entry for the ref: a NumPy int (never a Python int) or a plain slice."""
    try:
        picked = range(n)[k]  # normalises negatives, clips slices, checks int bounds
    except IndexError:
        raise IndexError(f"index {k} is out of range for an axis of length {n}") from None
    if isinstance(picked, int):
        return np.int32(picked)
    if len(picked) == 0:
        return slice(0, 0, 1)
    return slice(picked.start, picked.start + (len(picked) - 1) * picked.step + 1, picked.step)


def _length(entry, n):
    return len(range(n)[entry])


def _selection(axes, shape, sel):
    """Positional index (in the axes' order), the axes it keeps, and its shape."""
    if sel is ...:
        sel = {}
    if not isinstance(sel, dict):
        raise TypeError(f"a selection is ... or a dict {{axis: int | slice}}, not {sel!r}")
    for name in sel:
        if name not in axes:
            raise KeyError(f"no axis named {name!r} (axes: {', '.join(axes)})")
    index = tuple(
        _positional(_check_key(a, sel.get(a, _WHOLE)), n) for a, n in zip(axes, shape, strict=False)
    )
    kept = tuple(a for a, e in zip(axes, index, strict=False) if isinstance(e, slice))
    kept_shape = tuple(_length(e, n) for e, n in zip(index, shape, strict=False) if isinstance(e, slice))
    return index, kept, kept_shape


class NamedRef:
    """A `jax.Ref` whose axes have names; index it with `...` or a dict {axis: int | slice}."""

    __slots__ = ("ref", "axes")

    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    @property
    def shape(self):
        """The buffer's shape, as a tuple of ints (the ref's type; nothing is read)."""
        return tuple(map(int, self.ref.shape))

    @property
    def named_shape(self):
        """{axis name: length}, in axis order."""
        return {a: n for a, n in zip(self.axes, self.shape, strict=False)}

    @property
    def dtype(self):
        """The buffer's dtype."""
        return self.ref.dtype

    def __repr__(self):
        dims = ", ".join(f"{a}={n}" for a, n in self.named_shape.items())
        return f"NamedRef({dims}, dtype={self.dtype})"

    def __getitem__(self, sel):
        """Read the selection `sel` (`...` or a dict {axis: int | slice}): one load."""
        index, _, _ = _selection(self.axes, self.shape, sel)
        return self.ref[index]

    def __setitem__(self, sel, value):
        """Write `value` into the selection: cast, fill a scalar, refuse other shapes; one store."""
        index, kept, kept_shape = _selection(self.axes, self.shape, sel)
        value = _fit(value, self.dtype, kept, kept_shape)
        self.ref[index] = value


def _fit(value, dtype, kept, kept_shape):
    """Cast `value` to `dtype` and give it the selection's shape (scalars only broadcast)."""
    value = jnp.asarray(value).astype(dtype)
    if jnp.shape(value) == ():
        return jnp.full(kept_shape, value, dtype)
    if jnp.shape(value) != kept_shape:
        raise ValueError(
            f"a value of shape {jnp.shape(value)} for the selection over {kept}, "
            f"of shape {kept_shape}"
        )
    return value


def _flatten(named):
    return (named.ref,), named.axes


def _unflatten(axes, children):
    (ref,) = children
    return NamedRef(ref, axes)


tree_util.register_pytree_node(NamedRef, _flatten, _unflatten)


def new_ref(value, axes):
    """A NamedRef over a new `jax.Ref` holding `value`; one name per dimension, no repeats."""
    value = jnp.asarray(value)
    axes = tuple(axes)
    if len(axes) != value.ndim:
        raise ValueError(f"got {len(axes)} names {axes} for {value.ndim} dimensions {value.shape}")
    seen = set()
    for a in axes:
        if not isinstance(a, str):
            raise ValueError(f"axis names are strings, got {a!r}")
        if a in seen:
            raise ValueError(f"the axis name {a!r} repeats in {axes}")
        seen.add(a)
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    """The buffer as an array, ending the reference (with `jax.freeze`)."""
    return jax.freeze(ref.ref)
