"""named_ref as a dataclass registered with `jax.tree_util.register_dataclass`, the names marked static
by field metadata (the JAX docs' spelling); the selection's shape comes from `range` objects."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class NamedRef:
    ref: jax.Ref
    axes: tuple[str, ...] = dataclasses.field(metadata=dict(static=True))

    @property
    def shape(self):
        return tuple(self.ref.shape)

    @property
    def named_shape(self):
        return {a: n for a, n in zip(self.axes, self.shape, strict=True)}

    @property
    def dtype(self):
        return self.ref.dtype

    def _picks(self, sel):
        """{axis: int | range} for every axis, in axis order."""
        chosen = {} if sel is Ellipsis else sel
        for name in chosen:
            if name not in self.axes:
                raise KeyError(f"{name!r} is not one of the axes {self.axes}")
        picks = {}
        for name, n in self.named_shape.items():
            entry = chosen.get(name, slice(None))
            picks[name] = range(n)[entry] if isinstance(entry, slice) else entry
        return picks

    @staticmethod
    def _index(picks):
        return tuple(slice(p.start, p.stop, p.step) if isinstance(p, range) else np.int32(p) for p in picks.values())

    def __getitem__(self, sel):
        return self.ref[self._index(self._picks(sel))]

    def __setitem__(self, sel, value):
        picks = self._picks(sel)
        kept = {name: len(p) for name, p in picks.items() if isinstance(p, range)}
        shape = tuple(kept.values())
        value = jnp.asarray(value).astype(self.dtype)
        if jnp.ndim(value) == 0:
            value = jnp.broadcast_to(value, shape)
        if value.shape != shape:
            raise ValueError(f"value of shape {value.shape} does not fit the selection over {tuple(kept)} "
                             f"of shape {shape}")
        self.ref[self._index(picks)] = value


def new_ref(value, axes):
    value = jnp.asarray(value)
    axes = tuple(axes)
    if len(axes) != value.ndim:
        raise ValueError(f"{value.ndim} dimensions but {len(axes)} names {axes}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis name in {axes}")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
