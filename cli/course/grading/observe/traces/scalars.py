"""Exact evaluation of a jaxpr's integer arithmetic, with floating-point data left unknown.

A kernel's control flow (grid indices, loop counters, slot numbers, `pl.when` conditions) is
integer and boolean arithmetic, and can be worked out in plain NumPy without compiling anything.
Its floating-point data never decides where memory moves, so it is left `Unknown`: only its shape
and dtype are kept. `apply(eqn, values)` evaluates one equation of the arithmetic the TPU scalar
unit runs (lax's rules: integer division rounds toward zero, `rem` takes the dividend's sign,
integers wrap), and returns None for a primitive it does not model, so a caller can treat the
structural ones (loops, conditionals, refs) itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax.extend as jex
import numpy as np

__all__ = ["Unknown", "apply", "const_value", "is_known", "literal_value", "modelled", "read_var", "unknown_like"]

# Larger integer arrays (a (1024, 1024) iota mask) are left unknown: nothing they decide is traced.
MAX_KNOWN_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class Unknown:
    """A value the trace does not know: floating-point data, or anything computed from it."""

    shape: tuple[int, ...]
    dtype: Any


def unknown_like(var: Any) -> Unknown:
    """An Unknown with the shape and dtype of a jaxpr variable."""
    aval = var.aval
    return Unknown(tuple(getattr(aval, "shape", ())), getattr(aval, "dtype", None))


def is_known(value: Any) -> bool:
    """Whether `value` is a concrete NumPy value."""
    return isinstance(value, np.ndarray)


def literal_value(var: Any) -> np.ndarray:
    """The NumPy value of a jaxpr literal, in the literal's dtype."""
    dtype = np.dtype(var.aval.dtype) if _numpy_dtype(var.aval.dtype) else None
    return np.asarray(var.val, dtype=dtype)


def _numpy_dtype(dtype: Any) -> bool:
    """Whether NumPy knows this dtype (a semaphore's does not)."""
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero, as `lax.div` does."""
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`lax.div`: truncating for integers, true division for floats."""
    if np.issubdtype(a.dtype, np.integer):
        return _int_div(a, b)
    return a / b


def _rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`lax.rem`: the remainder takes the sign of the dividend."""
    return np.fmod(a, b)


def _select_n(pred: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    """`lax.select_n`: case `pred` of each element (False picks the first)."""
    shape = np.broadcast_shapes(pred.shape, *(c.shape for c in cases))
    which = np.broadcast_to(pred.astype(np.int64), shape)
    return np.choose(which, [np.broadcast_to(c, shape) for c in cases])


def _shift_right_logical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A right shift that fills with zeros, for signed integers too."""
    unsigned = a.dtype.newbyteorder("=").str.replace("i", "u")
    return np.right_shift(a.view(unsigned), b.astype(unsigned)).view(a.dtype)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div, "rem": _rem,
    "max": np.maximum, "min": np.minimum, "pow": np.power, "atan2": np.arctan2,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shift_left": np.left_shift, "shift_right_arithmetic": np.right_shift,
    "shift_right_logical": _shift_right_logical, "nextafter": np.nextafter,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "not": np.invert, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "square": np.square, "sqrt": np.sqrt, "exp": np.exp,
    "log": np.log, "population_count": lambda a: np.bitwise_count(a).astype(a.dtype),
}
# Primitives that pass their operand through unchanged (hints to the compiler).
_IDENTITY = frozenset({"multiple_of", "copy", "copy_p", "optimization_barrier", "reduce_precision",
                       "pvary", "stop_gradient"})


def _structural(prim: str, eqn: Any, a: list[np.ndarray]) -> np.ndarray | None:
    """Shape-changing and reducing primitives, or None when `prim` is not one of them."""
    p = eqn.params
    if prim == "convert_element_type":
        return a[0].astype(np.dtype(p["new_dtype"]))
    if prim == "broadcast_in_dim":
        shape, dims = tuple(p["shape"]), tuple(p["broadcast_dimensions"])
        expanded = a[0].reshape([a[0].shape[dims.index(d)] if d in dims else 1 for d in range(len(shape))])
        return np.broadcast_to(expanded, shape).copy()
    if prim == "reshape":
        return a[0].reshape(tuple(p["new_sizes"]))
    if prim == "squeeze":
        return np.squeeze(a[0], axis=tuple(p["dimensions"]))
    if prim == "expand_dims":
        return np.expand_dims(a[0], tuple(p["dimensions"]))
    if prim == "transpose":
        return np.transpose(a[0], tuple(p["permutation"]))
    if prim == "iota":
        shape, dim = tuple(p["shape"]), p["dimension"]
        line = np.arange(shape[dim], dtype=np.dtype(p["dtype"]))
        return np.broadcast_to(line.reshape([-1 if d == dim else 1 for d in range(len(shape))]), shape).copy()
    if prim == "concatenate":
        return np.concatenate(a, axis=p["dimension"])
    if prim == "slice":
        strides = p.get("strides") or (1,) * a[0].ndim
        return a[0][tuple(slice(s, e, st) for s, e, st in zip(p["start_indices"], p["limit_indices"],
                                                                strides, strict=True))]
    if prim == "dynamic_slice":
        starts = [int(np.clip(s, 0, n - k)) for s, n, k in zip(a[1:], a[0].shape, p["slice_sizes"], strict=True)]
        return a[0][tuple(slice(s, s + k) for s, k in zip(starts, p["slice_sizes"], strict=True))]
    if prim in ("reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin"):
        return _reduce(prim, a[0], tuple(p["axes"]), p)
    if prim == "clamp":
        return np.clip(a[1], a[0], a[2])
    if prim == "select_n":
        return _select_n(*a)
    if prim == "integer_pow":
        return np.power(a[0], p["y"])
    return None


def _reduce(prim: str, x: np.ndarray, axes: tuple[int, ...], p: dict[str, Any]) -> np.ndarray:
    """A reduction over `axes`."""
    if prim in ("argmax", "argmin"):
        fn = np.argmax if prim == "argmax" else np.argmin
        return fn(x, axis=axes[0]).astype(np.dtype(p["index_dtype"]))
    fn = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_and": np.all,
          "reduce_or": np.any}[prim]
    return np.asarray(fn(x, axis=axes)).astype(x.dtype)


def _compute(prim: str, eqn: Any, a: list[np.ndarray]) -> np.ndarray | None:
    """The value of one equation on known operands, or None for a primitive not modelled here."""
    if prim in _IDENTITY:
        return a[0]
    if prim in _BINARY and len(a) == 2:
        return np.asarray(_BINARY[prim](*np.broadcast_arrays(a[0], a[1])))
    if prim in _UNARY and len(a) == 1:
        return np.asarray(_UNARY[prim](a[0]))
    return _structural(prim, eqn, a)


def modelled(prim: str) -> bool:
    """Whether `apply` knows the primitive's arithmetic."""
    return prim in _IDENTITY or prim in _BINARY or prim in _UNARY or prim in _KNOWN_STRUCTURAL


_KNOWN_STRUCTURAL = frozenset({
    "convert_element_type", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "iota",
    "concatenate", "slice", "dynamic_slice", "reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
    "argmax", "argmin", "clamp", "select_n", "integer_pow",
})


def apply(eqn: Any, values: list[Any]) -> list[Any] | None:
    """The outputs of one equation: NumPy values when its operands are known, else Unknowns.

    Returns None for a primitive whose arithmetic is not modelled; the caller decides (a trace
    leaves its outputs unknown). Floating-point results are computed only from known operands,
    which in a kernel means from literals.
    """
    prim = eqn.primitive.name
    if not modelled(prim):
        return None
    outs = eqn.outvars
    if not all(is_known(v) for v in values) or any(
            int(np.prod(getattr(o.aval, "shape", ()))) > MAX_KNOWN_ELEMENTS for o in outs):
        return [unknown_like(o) for o in outs]
    with np.errstate(all="ignore"):
        try:
            result = _compute(prim, eqn, values)
        except (ZeroDivisionError, ValueError, TypeError, IndexError):
            result = None
    if result is None:
        return [unknown_like(o) for o in outs]
    dtype = outs[0].aval.dtype
    return [np.asarray(result).astype(np.dtype(dtype)) if _numpy_dtype(dtype) else unknown_like(outs[0])]


def read_var(var: Any, env: dict[Any, Any]) -> Any:
    """The value of a jaxpr variable or literal in `env`."""
    if isinstance(var, jex.core.Literal):
        return literal_value(var)
    return env[var]


def const_value(const: Any) -> Any:
    """A jaxpr constant as a trace holds it: small integer and boolean arrays known, the rest unknown."""
    shape = tuple(np.shape(const))
    try:
        dtype = np.dtype(const.dtype)
    except (AttributeError, TypeError):
        return np.asarray(const) if isinstance(const, int | bool | np.integer) else Unknown(shape, None)
    if (np.issubdtype(dtype, np.integer) or dtype == np.bool_) and np.size(const) <= MAX_KNOWN_ELEMENTS:
        return np.asarray(const)
    return Unknown(shape, dtype)
