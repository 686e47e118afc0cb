"""Array checks in the course's words: a real `jax.Array` first, then dtype, shape and contents."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from course.grading.feedback import fail

__all__ = [
    "BlockMismatch",
    "assert_array",
    "assert_dtype",
    "assert_is_array",
    "assert_shape",
    "block_mismatches",
    "describe_value",
]


@functools.cache
def _array_type() -> type:
    """The concrete class of JAX arrays; `device_put` of a NumPy scalar compiles nothing."""
    return type(jax.device_put(np.zeros((), np.float32)))


def describe_value(x: Any) -> str:
    """A short learner-facing description of what a value is, e.g. 'a NumPy array float32[3]'."""
    if x is None:
        return "None"
    if isinstance(x, np.ndarray):
        return f"a NumPy array {x.dtype}{list(x.shape)}"
    if isinstance(x, np.generic):
        return f"a NumPy scalar of dtype {x.dtype}"
    if isinstance(x, bool | int | float | complex):
        return f"a Python {type(x).__name__} ({x!r})"
    if isinstance(x, list | tuple | dict):
        return f"a {type(x).__name__} of {len(x)} item(s)"
    return f"an object of type {type(x).__module__}.{type(x).__qualname__}"


def assert_is_array(x: Any, name: str = "the result") -> jax.Array:
    """Fail unless `x` is a live, concrete `jax.Array`; return it."""
    if isinstance(x, jax.core.Tracer):
        fail(f"{name} is a traced value, not a concrete array: a value from inside "
             "`jax.jit` escaped (was it stored in a global or a list?)")
    # Check the concrete class as well: a subclass of jax.Array can claim to equal anything.
    if not isinstance(x, jax.Array) or type(x) is not _array_type():
        hint = ""
        if x is None:
            hint = " (did you forget to `return` it?)"
        elif isinstance(x, np.ndarray | np.generic):
            hint = " (computing with NumPy or calling `np.asarray` leaves JAX; keep it a jax.Array)"
        fail(f"{name} should be a jax.Array, but it is {describe_value(x)}{hint}")
    if x.is_deleted():
        fail(f"{name} is a deleted array: its buffer was donated to a jitted call, so it holds "
             "no data any more. Return the output of the call, not an input you donated.")
    return x


def assert_dtype(x: jax.Array, dtype: Any, name: str = "the result") -> None:
    """Fail unless `x` has exactly the dtype `dtype`."""
    want = np.dtype(dtype)
    if x.dtype != want:
        fail(f"{name} has dtype {x.dtype}, expected {want}")


def assert_shape(x: jax.Array, shape: tuple[int, ...], name: str = "the result") -> None:
    """Fail unless `x` has exactly the shape `shape`."""
    if tuple(x.shape) != tuple(shape):
        fail(f"{name} has shape {tuple(x.shape)}, expected {tuple(shape)}")


def assert_array(
    got: Any,
    expected: Any,
    *,
    name: str = "the result",
    rtol: float = 0.0,
    atol: float = 0.0,
    dtype: Any = None,
) -> jax.Array:
    """Fail unless `got` is a jax.Array with the dtype, shape and contents of `expected`.

    Contents are compared exactly when both tolerances are 0, else with `np.isclose`; NaNs in
    the same places count as equal. `dtype` overrides the dtype taken from `expected`.
    """
    arr = assert_is_array(got, name)
    want = np.asarray(expected)
    assert_dtype(arr, want.dtype if dtype is None else dtype, name)
    assert_shape(arr, want.shape, name)
    _assert_contents(np.asarray(arr), want, name=name, rtol=rtol, atol=atol)
    return arr


def _assert_contents(got: np.ndarray, want: np.ndarray, *, name: str, rtol: float, atol: float) -> None:
    """Fail naming the first differing index, both values and how many elements differ."""
    if got.size == 0:
        return
    if (rtol or atol) and np.issubdtype(want.dtype, np.inexact):
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        how = f" (tolerance rtol={rtol:g}, atol={atol:g})"
    else:
        same_nan = np.isnan(got) & np.isnan(want) if np.issubdtype(want.dtype, np.inexact) else False
        close = (got == want) | same_nan
        how = " (compared exactly)"
    if np.all(close):
        return
    bad = np.argwhere(~close)  # for a 0-d array, one row of no coordinates: its size is 0 even when it differs
    first = tuple(int(i) for i in bad[0])
    where = list(first) if first else "[]"
    fail(f"{name} differs from the expected value in {len(bad)} of {got.size} element(s){how}; "
         f"the first is at index {where}: expected {want[first]!s}, got {got[first]!s}")


@dataclass(frozen=True)
class BlockMismatch:
    """One block of a result that differs from the expected block, and what it holds instead."""

    index: tuple[int, ...]
    """The block's coordinates, e.g. (1, 2) for rows 8:16 and columns 256:384 of (8, 128) blocks."""
    nan_count: int
    size: int
    same_as: str | None
    """The name of the first `known` array whose block it equals, or None."""
    first: tuple[int, ...]
    """The first differing element, in the coordinates of the whole array."""
    got: Any
    want: Any

    def holds(self) -> str:
        """What the block holds, for a message: 'NaN in all 1024 elements', 'the values of `x`'..."""
        if self.nan_count:
            count = "all" if self.nan_count == self.size else f"{self.nan_count} of"
            return f"NaN in {count} {self.size} elements"
        if self.same_as is not None:
            return f"the values of {self.same_as}"
        return f"other values ({self.got!s} at index {list(self.first)}, expected {self.want!s})"


def block_mismatches(got: Any, expected: Any, block: tuple[int, ...], *, known: dict[str, Any] | None = None,
                     rtol: float = 0.0, atol: float = 0.0) -> list[BlockMismatch]:
    """The blocks of `got` that differ from `expected`, in row-major order, each saying what it holds.

    A block is compared whole; the array's shape must be a multiple of `block`. `known` names
    arrays a wrong block might equal (`{"`x`": x}`): a mismatch says which one, so a message can
    tell "never written (NaN)" from "copied from the input" from "computed wrongly". NaNs in the
    same places count as equal, as in `assert_array`.
    """
    g, w = np.asarray(got), np.asarray(expected)
    others = {name: np.asarray(a) for name, a in (known or {}).items()}
    counts = [size // b for size, b in zip(w.shape, block, strict=True)]
    found = []
    for index in itertools.product(*(range(c) for c in counts)):
        region = tuple(slice(i * b, (i + 1) * b) for i, b in zip(index, block, strict=True))
        gb, wb = g[region], w[region]
        same = _same(gb, wb, rtol=rtol, atol=atol)
        if same.all():
            continue
        first = tuple(int(i) for i in np.argwhere(~same)[0])
        name = next((n for n, a in others.items() if np.array_equal(gb, a[region])), None)
        nans = int(np.isnan(gb).sum()) if np.issubdtype(gb.dtype, np.inexact) else 0
        found.append(BlockMismatch(
            index=index, nan_count=nans, size=int(gb.size), same_as=name,
            first=tuple(i * b + f for i, b, f in zip(index, block, first, strict=True)),
            got=gb[first], want=wb[first]))
    return found


def _same(got: np.ndarray, want: np.ndarray, *, rtol: float, atol: float) -> np.ndarray:
    """Elementwise equality (within the tolerance when one is given), NaN equal to NaN."""
    inexact = np.issubdtype(want.dtype, np.inexact)
    if (rtol or atol) and inexact:
        return np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return (got == want) | (np.isnan(got) & np.isnan(want)) if inexact else got == want
