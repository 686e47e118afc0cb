"""How far a low-precision result is from the correctly rounded one, as a share of its elements.

A bfloat16 matmul that accumulates in float32 and rounds once at the end gives, element for
element, almost always the bfloat16 nearest to the exact product: the float32 sum is far more
precise than bfloat16's 8 bits, so only elements lying very near a rounding boundary can land on
the other side. Accumulating in bfloat16 rounds at every step, and half of the elements or more
come out different. An error norm hardly tells the two apart (a relative error of 1.7e-3
against 3e-3), while the share of elements that differ from the correctly rounded product
separates them by three orders of magnitude (0.0002 against 0.4 to 0.6 on random normal data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RoundingReport", "correctly_rounded", "exact_matmul", "rounding_report"]


def exact_matmul(x: Any, y: Any) -> np.ndarray:
    """x @ y computed in float64 from the inputs' own values: exact for bfloat16 inputs up to K = 2**20."""
    return np.asarray(x, np.float64) @ np.asarray(y, np.float64)


def correctly_rounded(exact: np.ndarray, dtype: Any) -> np.ndarray:
    """`exact` rounded to `dtype` by way of float32 (to nearest, ties to even), as float64 for comparing.

    NumPy does the rounding (bfloat16 comes from `ml_dtypes`, as in JAX), so nothing compiles.
    """
    target = np.dtype(dtype)
    if target == np.float64:
        return np.asarray(exact, np.float64)
    return np.asarray(exact, np.float32).astype(target).astype(np.float64)


@dataclass(frozen=True)
class RoundingReport:
    """How many elements of a result differ from the correctly rounded exact value."""

    total: int
    differing: int
    nonfinite: int

    @property
    def share(self) -> float:
        """The share of elements that differ (NaN and infinity included)."""
        return (self.differing + self.nonfinite) / self.total if self.total else 0.0

    def percent(self) -> str:
        """The share as a percentage for a message: '50%', '0.02%'."""
        value = 100 * self.share
        return f"{value:.0f}%" if value >= 10 else f"{value:.2g}%"


def rounding_report(got: Any, exact: np.ndarray, dtype: Any) -> RoundingReport:
    """Compare `got` with `exact` rounded once to `dtype`, element by element.

    Rounding `exact` (float64) goes through float32, which can round twice; that changes an
    element only when the float32 value sits exactly on a bfloat16 tie, which random data almost
    never does, and a correct kernel's float32 accumulator rounds the same way.
    """
    values = np.asarray(got, np.float64)
    target = correctly_rounded(exact, dtype)
    finite = np.isfinite(values)
    differing = int(np.count_nonzero(finite & (values != target)))
    return RoundingReport(total=int(values.size), differing=differing, nonfinite=int(np.count_nonzero(~finite)))
