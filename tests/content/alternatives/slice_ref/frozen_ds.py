"""slice_ref as frozen dataclasses whose kept axes are `pl.ds(start, size, stride)` slices."""

from __future__ import annotations

import dataclasses
import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl


def _checked_value(value, shape, dtype, axes):
    value = jnp.asarray(value, dtype)
    if value.ndim == 0:
        return jnp.broadcast_to(value, shape)
    if value.shape != tuple(shape):
        raise ValueError(f"value shape {value.shape} != selection shape {tuple(shape)} over {tuple(axes)}")
    return value


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NamedRef:
    ref: jax.Ref
    axes: tuple = dataclasses.field(metadata={"static": True})

    @property
    def shape(self):
        return tuple(self.ref.shape)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.ref.dtype

    def __getitem__(self, sel):
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        self.slice(...)[sel] = value

    def slice(self, sel):
        return SliceRef(self, tuple(pl.ds(0, n) for n in self.shape)).slice(sel)


def _expand(sel, axes):
    if isinstance(sel, dict):
        missing = set(sel) - set(axes)
        if missing:
            raise KeyError(f"no axis {sorted(missing)} in {axes}")
        return tuple(sel.get(a, slice(None)) for a in axes)
    items = sel if isinstance(sel, tuple) else (sel,)
    where = [i for i, x in enumerate(items) if x is Ellipsis]
    if len(where) > 1:
        raise IndexError("two ellipses")
    if where:
        k = where[0]
        items = items[:k] + (slice(None),) * (len(axes) - len(items) + 1) + items[k + 1:]
    if len(items) > len(axes):
        raise IndexError("too many indices")
    return items + (slice(None),) * (len(axes) - len(items))


def _apply(ds, entry, name):
    positions = range(ds.start, ds.start + ds.size * ds.stride, ds.stride)
    if isinstance(entry, slice):
        if entry.step is not None and entry.step <= 0:
            raise ValueError(f"non-positive step for {name!r}")
        kept = positions[entry]
        # An empty selection still starts inside the axis: JAX refuses a ref slice that starts past its end.
        return pl.ds(kept.start, len(kept), kept.step) if len(kept) else pl.ds(0, 0)
    i = operator.index(entry)
    if i >= len(positions) or i < -len(positions):
        raise IndexError(f"{name}: {i} out of range({len(positions)})")
    return positions[i]


@dataclasses.dataclass(frozen=True)
class SliceRef:
    base: NamedRef
    view: tuple

    @property
    def axes(self):
        return tuple(a for a, d in zip(self.base.axes, self.view, strict=True) if not isinstance(d, int))

    @property
    def shape(self):
        return tuple(d.size for d in self.view if not isinstance(d, int))

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.base.dtype

    def slice(self, sel):
        entries = iter(_expand(sel, self.axes))
        return SliceRef(self.base, tuple(
            d if isinstance(d, int) else _apply(d, next(entries), a)
            for a, d in zip(self.base.axes, self.view, strict=True)))

    def _ref_index(self):
        return tuple(np.int32(d) if isinstance(d, int) else d for d in self.view)

    def __getitem__(self, sel):
        return self.base.ref[self.slice(sel)._ref_index()]

    def __setitem__(self, sel, value):
        target = self.slice(sel)
        self.base.ref[target._ref_index()] = _checked_value(value, target.shape, self.dtype, target.axes)

    def value(self):
        return self[...]

    def unsliced(self):
        return self.base


def new_ref(value, axes):
    value, axes = jnp.asarray(value), tuple(axes)
    if value.ndim != len(axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes} must name the {value.ndim} dimensions, each once")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
