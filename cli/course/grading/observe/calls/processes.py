"""Helpers for graders of exercises that run in several processes (`processes = N` in `exercise.toml`).

Every process runs the same grader; each has its own devices and its own rows. `step` names the
part of a check this process is in, so that when the processes stop waiting on each other the
parent can say where each one was. `RowLog` is a reader that records what it was asked for:
which rows a process read is what distinguishes "each process loads its own rows" from "every
process loads everything", which give the same values.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from course.engine.common import peers

__all__ = ["RowLog", "own_rows", "rows_text", "step"]


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Tell the parent this process is in step `name` while the block runs (display and hang messages only)."""
    peers.announce(name)
    yield


def own_rows(num_rows: int, index: int, count: int) -> range:
    """The contiguous rows process `index` of `count` owns: `[⌊index·n/count⌋, ⌊(index+1)·n/count⌋)`.

    When `count` does not divide `n`, the blocks differ by one row and still cover every row.
    """
    return range(index * num_rows // count, (index + 1) * num_rows // count)


@dataclass
class RowLog:
    """A `read_rows(start, stop)` over `data` that records every call (the rows a process asked for)."""

    data: np.ndarray
    calls: list[tuple[Any, Any]] = field(default_factory=list)

    def __call__(self, start: Any, stop: Any) -> np.ndarray:
        """Rows `start` to `stop` of the data, as a fresh NumPy copy; the call is recorded as made.

        Row numbers are integers, as an array's slice wants them: a float (`n / p` for `n // p`) is
        refused, as a file or array reader would refuse it, rather than rounded into the right rows."""
        self.calls.append((start, stop))
        try:
            lo, hi = operator.index(start), operator.index(stop)
        except TypeError:
            raise TypeError(f"read_rows takes integer row numbers, as slicing an array does, and was called "
                            f"as read_rows({start!r}, {stop!r}): use integer division (//)") from None
        return np.array(self.data[max(lo, 0):max(hi, 0)])

    def rows(self) -> list[int]:
        """Every row read, in the order read (a row read twice appears twice)."""
        n = len(self.data)
        return [r for start, stop in self.calls for r in range(*slice(int(start), int(stop)).indices(n))]

    def calls_text(self, limit: int = 3) -> str:
        """`read_rows(0, 64)`, or the first few calls and how many more."""
        shown = [f"read_rows({a}, {b})" for a, b in self.calls[:limit]]
        more = f" and {len(self.calls) - limit} more" if len(self.calls) > limit else ""
        return ", ".join(shown) + more if shown else "no call of read_rows"


def rows_text(rows: list[int]) -> str:
    """Rows as ranges: `0-31`, `0-15, 32-47`, or `none`."""
    if not rows:
        return "none"
    ordered, spans = sorted(set(rows)), []
    start = prev = ordered[0]
    for r in ordered[1:]:
        if r != prev + 1:
            spans.append((start, prev))
            start = r
        prev = r
    spans.append((start, prev))
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in spans]
    return ", ".join(text[:4]) + (f" and {len(text) - 4} more ranges" if len(text) > 4 else "")
