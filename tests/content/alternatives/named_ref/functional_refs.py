"""named_ref with JAX's functional ref API (`jax.ref.get` / `jax.ref.set`) and `register_pytree_node`."""

import jax
import numpy as np
from jax import numpy as jnp
from jax import ref as jref
from jax import tree_util


class NamedRef:
    def __init__(self, ref, axes):
        self.ref, self.axes = ref, tuple(axes)

    @property
    def shape(self):
        return jax.typeof(self.ref).shape

    @property
    def named_shape(self):
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def dtype(self):
        return jax.typeof(self.ref).dtype

    def _where(self, sel):
        picks = {} if sel is ... else dict(sel)
        for name in picks:
            if name not in self.named_shape:
                raise KeyError(name)
        out = []
        for name in self.axes:
            pick = picks.get(name, slice(None))
            out.append(pick if isinstance(pick, slice) else np.int32(pick))
        return tuple(out)

    def __getitem__(self, sel):
        return jref.get(self.ref, self._where(sel))

    def __setitem__(self, sel, value):
        where = self._where(sel)
        keep = [(a, len(range(*w.indices(n)))) for a, n, w in zip(self.axes, self.shape, where, strict=True)
                if isinstance(w, slice)]
        shape = tuple(n for _, n in keep)
        value = jnp.asarray(value).astype(self.dtype)
        if not value.shape:
            value = jnp.broadcast_to(value, shape)
        elif value.shape != shape:
            raise ValueError(f"expected shape {shape} for axes {[a for a, _ in keep]}, got {value.shape}")
        jref.set(self.ref, where, value)


tree_util.register_pytree_node(NamedRef, lambda r: ([r.ref], r.axes), lambda axes, kids: NamedRef(kids[0], axes))


def new_ref(value, axes):
    value = jnp.asarray(value)
    axes = tuple(axes)
    if value.ndim != len(axes) or len(axes) != len(frozenset(axes)):
        raise ValueError(f"axes {axes} do not name the {value.ndim} dimensions once each")
    return NamedRef(jax.new_ref(value), axes)


def freeze(ref):
    return jax.freeze(ref.ref)
