"""slice_ref with explicit arithmetic: each kept axis is (start, size, stride); composed by hand."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


def _checked_value(value, shape, dtype, axes):
    value = jnp.asarray(value, dtype)
    if value.ndim == 0:
        return jnp.broadcast_to(value, shape)
    if value.shape != tuple(shape):
        raise ValueError(f"shape {value.shape} does not fit the selection over {tuple(axes)}: {tuple(shape)}")
    return value


@tree_util.register_pytree_node_class
class NamedRef:
    def __init__(self, ref, axes):
        self.ref = ref
        self.axes = tuple(axes)

    @property
    def shape(self):
        return tuple(self.ref.shape)

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return self.ref.dtype

    def tree_flatten(self):
        return (self.ref,), self.axes

    @classmethod
    def tree_unflatten(cls, axes, children):
        return cls(children[0], axes)

    def __getitem__(self, sel):
        return self.slice(...)[sel]

    def __setitem__(self, sel, value):
        self.slice(...)[sel] = value

    def slice(self, sel):
        return SliceRef(self, [(0, n, 1) for n in self.shape]).slice(sel)


def _narrow(start, size, stride, s):
    """Apply slice `s` to the progression start, start + stride, ... (size terms)."""
    step = 1 if s.step is None else s.step
    if step < 1:
        raise ValueError("steps must be positive")
    lo = 0 if s.start is None else s.start
    hi = size if s.stop is None else s.stop
    lo = min(max(lo + size if lo < 0 else lo, 0), size)
    hi = min(max(hi + size if hi < 0 else hi, 0), size)
    count = max(0, -(-(hi - lo) // step))
    return (start + lo * stride, count, stride * step)


class SliceRef:
    def __init__(self, base, view):
        self.base = base
        self.view = tuple(view)

    def _kept(self):
        return [(name, e) for name, e in zip(self.base.axes, self.view, strict=True) if isinstance(e, tuple)]

    @property
    def axes(self):
        return tuple(name for name, _ in self._kept())

    @property
    def shape(self):
        return tuple(e[1] for _, e in self._kept())

    @property
    def named_shape(self):
        return {name: e[1] for name, e in self._kept()}

    @property
    def dtype(self):
        return self.base.dtype

    def _per_axis(self, sel):
        axes = self.axes
        if sel is ...:
            return [slice(None)] * len(axes)
        if isinstance(sel, dict):
            bad = [k for k in sel if k not in axes]
            if bad:
                raise KeyError(f"{bad[0]!r} is not an axis of this view {axes}")
            return [sel.get(a, slice(None)) for a in axes]
        items = list(sel) if isinstance(sel, tuple) else [sel]
        dots = [i for i, item in enumerate(items) if item is ...]
        if len(dots) > 1:
            raise IndexError("more than one ellipsis")
        if dots:
            items[dots[0]:dots[0] + 1] = [slice(None)] * (len(axes) - len(items) + 1)
        if len(items) > len(axes):
            raise IndexError("too many indices")
        return items + [slice(None)] * (len(axes) - len(items))

    def _compose(self, sel):
        picks = iter(self._per_axis(sel))
        out = []
        for name, entry in zip(self.base.axes, self.view, strict=True):
            if not isinstance(entry, tuple):
                out.append(entry)
                continue
            start, size, stride = entry
            pick = next(picks)
            if isinstance(pick, slice):
                out.append(_narrow(start, size, stride, pick))
            else:
                k = int(pick)
                if k < -size or k >= size:
                    raise IndexError(f"{name}={k} is outside this view's {size} positions")
                out.append(start + (k % size) * stride)
        return out

    def _where(self, view):
        # An empty selection is `slice(0, 0)`: JAX refuses a ref slice that starts past the end of its axis.
        return tuple((slice(e[0], e[0] + (e[1] - 1) * e[2] + 1, e[2]) if e[1] else slice(0, 0))
                     if isinstance(e, tuple) else np.int32(e) for e in view)

    def __getitem__(self, sel):
        return self.base.ref[self._where(self._compose(sel))]

    def __setitem__(self, sel, value):
        target = SliceRef(self.base, self._compose(sel))
        self.base.ref[self._where(target.view)] = _checked_value(value, target.shape, self.dtype, target.axes)

    def slice(self, sel):
        return SliceRef(self.base, self._compose(sel))

    def value(self):
        return self[...]

    def unsliced(self):
        return self.base


def new_ref(value, axes):
    axes = tuple(axes)
    value = jnp.asarray(value)
    if len(axes) != value.ndim or len(set(axes)) != len(axes):
        raise ValueError(f"bad axis names {axes}")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
