"""The math of each kernel exercise: XLA's own op for it, the exact result, and its FLOPs and least HBM traffic.

`course bench` times the learner's kernel against `xla`, checks its values against `exact`
(float32 at the chip's highest precision), and puts both on the chip's roofline with `flops` and
`nbytes`: the FLOPs the math needs, and the bytes any program must move (every input read once,
the output written once). An exercise names its math in `exercise.toml` (`[chip] math = "matmul"`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MATHS", "Math"]


@dataclass(frozen=True)
class Math:
    """One kernel's math, for timing against XLA and for the roofline."""

    what: str
    """How a table names XLA's op."""
    xla: Callable[..., Any]
    exact: Callable[..., Any]
    flops: Callable[..., float]
    nbytes: Callable[..., float]


def _size(*arrays: Any) -> float:
    """Bytes of these arrays."""
    return float(sum(a.size * a.dtype.itemsize for a in arrays))


def _matmul_xla(x: Any, y: Any) -> Any:
    """`x @ y` as XLA does it, summed in float32, in x's dtype."""
    import jax.numpy as jnp

    return jnp.dot(x, y, preferred_element_type=jnp.float32).astype(x.dtype)


def _matmul_exact(x: Any, y: Any) -> Any:
    """`x @ y` in float32 at the highest precision."""
    import jax.numpy as jnp
    from jax import lax

    return jnp.dot(x.astype(jnp.float32), y.astype(jnp.float32), precision=lax.Precision.HIGHEST)


def _attention_xla(q: Any, k: Any, v: Any) -> Any:
    """softmax(q kᵀ / √d) v as XLA does it: the whole score matrix, in float32."""
    import jax
    import jax.numpy as jnp

    s = jnp.dot(q, k.T, preferred_element_type=jnp.float32) / math.sqrt(q.shape[1])
    return jnp.dot(jax.nn.softmax(s, axis=-1).astype(v.dtype), v, preferred_element_type=jnp.float32).astype(q.dtype)


def _attention_exact(q: Any, k: Any, v: Any) -> Any:
    """Attention in float32 at the highest precision."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    q, k, v = (a.astype(jnp.float32) for a in (q, k, v))
    s = jnp.dot(q, k.T, precision=lax.Precision.HIGHEST) / math.sqrt(q.shape[1])
    return jnp.dot(jax.nn.softmax(s, axis=-1), v, precision=lax.Precision.HIGHEST)


MATHS: dict[str, Math] = {
    "matmul": Math("jnp.dot", _matmul_xla, _matmul_exact,
                   lambda x, y: 2.0 * x.shape[0] * x.shape[1] * y.shape[1],
                   lambda x, y: _size(x, y) + x.shape[0] * y.shape[1] * x.dtype.itemsize),
    "attention": Math("softmax(q kᵀ) v", _attention_xla, _attention_exact,
                      lambda q, k, v: 4.0 * q.shape[0] * k.shape[0] * q.shape[1],
                      lambda q, k, v: _size(q, k, v) + _size(q)),
    "double": Math("2 * x", lambda x: 2 * x, lambda x: 2 * x.astype("float32"), lambda x: float(x.size),
                   lambda x: 2 * _size(x)),
}
