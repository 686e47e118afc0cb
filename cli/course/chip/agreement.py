"""Whether two results agree, at the precision a dtype allows, and what a chip's refusal says, in a few words.

Results are compared normwise: the largest difference over the largest value of the result
compared with. A chip rounds differently from a CPU: its float32 matmul runs one bfloat16 pass at
JAX's default precision (2.4e-3 off the exact product on a v5e, 5.7e-3 for flash attention), and a
bfloat16 output is itself rounded to 2^-8; so the tolerances sit well above those, and far below
any real mistake (a block missing, an accumulator never zeroed: errors of order one). Integers and
booleans must agree exactly; a NaN or an infinity must be where the other result has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TOLERANCE", "Agreement", "agree", "refusal"]

TOLERANCE = {"float32": 2e-2, "bfloat16": 3e-2, "float16": 3e-2, "float64": 1e-6}
"""Normwise relative tolerance by the result's dtype; anything else must agree exactly."""


@dataclass(frozen=True)
class Agreement:
    """How far a result is from the one it is compared with."""

    ok: bool
    error: float
    """The largest difference over the largest value, 0 for exact agreement."""
    tolerance: float
    where: str = ""
    """The first place they differ, as an index, when they do."""


def agree(got: Any, want: Any) -> Agreement:
    """Compare two arrays of the same shape at `got`'s dtype's tolerance."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    dtype = str(got_a.dtype)
    tol = TOLERANCE.get(dtype, 0.0)
    if got_a.shape != want_a.shape:
        return Agreement(False, float("inf"), tol, f"shape {got_a.shape} against {want_a.shape}")
    g, w = got_a.astype(np.float64), want_a.astype(np.float64)
    bad_special = (np.isnan(g) != np.isnan(w)) | (np.isinf(g) & (g != w))
    finite = np.isfinite(g) & np.isfinite(w)
    scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
    diff = np.where(finite, np.abs(g - w), 0.0)
    error = float(diff.max()) / scale if scale else float(diff.max())
    bad = bad_special | (diff > tol * (scale or 1.0))
    if not bad.any():
        return Agreement(True, error, tol)
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return Agreement(False, float("inf") if bad_special.any() else error, tol, str(list(first)))


_KINDS = (
    ("halted", ("RuntimeUnexpectedCoreHalt", "halted unexpectedly", "core halted")),
    ("vmem", ("CompileTimeScopedVmemOom", "E1001", "scoped vmem limit")),
    ("refused", ("Mosaic failed to compile", "Unimplemented primitive in Pallas TPU lowering",
                 "not implemented", "Not implemented", "divisible by 8 and 128", "Loads are only allowed")),
)


def refusal(exc: BaseException, path: Path, source: str) -> tuple[str, str]:
    """(kind, words) for an error the chip raised: "halted", "vmem", "refused" or "raised", its first line
    trimmed, and the learner's line it names, if it names one."""
    text = f"{type(exc).__name__}: {exc}"
    kind = next((k for k, marks in _KINDS if any(m in text for m in marks)), "raised")
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    if kind == "vmem":
        size = re.search(r"Scoped allocation with size ([\d.]+\w?) and limit ([\d.]+\w?)", text)
        first = (f"the kernel needs {size.group(1)}B of scoped VMEM, over the {size.group(2)}B limit"
                 if size else "the kernel's blocks and scratch do not fit in scoped VMEM")
    words = first[:300]
    found = re.search(rf"{re.escape(path.name)}\"?:(\d+)", text)
    if found:
        number = int(found.group(1))
        lines = source.splitlines()
        if 0 < number <= len(lines):
            words += f" (line {number}: {lines[number - 1].strip()})"
    return kind, words
