"""Matmul work of a jaxpr: every `dot_general` with its shapes, dtypes, flops, learner line and trip count.

`@`, `jnp.dot`, `jnp.einsum`, `lax.dot_general` and the matmuls autodiff writes for a backward pass
all trace to `dot_general`. One of them costs 2 * (output size) * (contracted size) flops per run,
and runs as many times as `course.grading.observe.traces.loops.eqn_runs` says. Work read this way is the same for
every loop style, while `compiled.cost_analysis()["flops"]` counts a loop body once whatever its
trip count, so it cannot compare a scan with unrolled code.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.observe.traces.jaxprs import learner_line, traced
from course.grading.observe.traces.loops import eqn_runs, times_run, type_text

__all__ = ["Matmul", "float32_matmuls", "matmul_flops", "matmuls_in", "matmuls_of", "mflop", "repeated_matmuls"]


@dataclass(frozen=True)
class Matmul:
    """One `dot_general` equation: what it multiplies, in which dtypes, how often and where."""

    lhs: str
    """The left operand's type: `float32[512, 64]`."""
    rhs: str
    out: str
    """The result's type; its dtype is `preferred_element_type` when one was asked for."""
    lhs_dtype: str
    rhs_dtype: str
    out_dtype: str
    preferred: str | None
    """`preferred_element_type` as the jaxpr holds it (`float32`), or None."""
    contracted: int
    """The product of the contracted dimensions' sizes."""
    batch: int
    """The product of the batch dimensions' sizes (1 for a plain matrix product)."""
    out_size: int
    times: int | None
    """How many times it runs per call (enclosing scan lengths multiplied), None when unknown."""
    unknown: str | None
    """Why `times` is unknown: `inside a while_loop at line 12`."""
    line: int | None
    in_loop: bool
    """Whether it sits inside a loop or a kernel grid (even a loop of one trip)."""
    dims: str
    """The dimension numbers, `((contracted lhs, rhs), (batch lhs, rhs))`, as text."""
    loops: tuple[tuple[str, int | None, int | None], ...] = ()
    """The loops around it, outermost first: (`scan` or `while`, trips or None, the learner's line)."""
    precision: str | None = None
    """The `precision=` asked for (`HIGHEST`, or `HIGHEST, DEFAULT` when the operands differ), None by default."""
    at_most: int | None = None
    """How many times it can run per call: `times`, or under a `cond` (each branch taken at most once per run)
    the product of the enclosing trip counts as if the branch were always taken; None under a while_loop."""

    def innermost_loop(self) -> tuple[str, int | None, int | None] | None:
        """(kind, trips, line) of the loop closest around it, or None outside any loop."""
        return self.loops[-1] if self.loops else None

    @property
    def flops(self) -> int:
        """Flops of one run: 2 * output size * contracted size."""
        return 2 * self.out_size * self.contracted

    @property
    def total_flops(self) -> int | None:
        """Flops over every run, or None when the trip count is unknown."""
        return None if self.times is None else self.flops * self.times

    def describe(self) -> str:
        """`float32[512, 64] @ float32[64, 256] -> float32[512, 256]`."""
        return f"{self.lhs} @ {self.rhs} -> {self.out}"

    def dtype_text(self) -> str:
        """`multiplies bfloat16[256, 64] by bfloat16[64, 128] into float32`: the operands and the result's dtype."""
        return f"multiplies {self.lhs} by {self.rhs} into {self.out_dtype}"

    def signature(self) -> tuple[str, str, str, str]:
        """What makes two matmuls the same computation on other data: operand and result types, dimensions."""
        return self.lhs, self.rhs, self.out, self.dims


def matmuls_in(jaxpr: Any, *, path: Path | None = None) -> list[Matmul]:
    """Every `dot_general` of a (closed) jaxpr and its nested jaxprs, in program order."""
    found = []
    for run in eqn_runs(jaxpr, path=path):
        if run.primitive != "dot_general":
            continue
        eqn = run.eqn
        (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
        lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
        out = eqn.outvars[0].aval
        preferred = eqn.params.get("preferred_element_type")
        found.append(Matmul(
            lhs=type_text(lhs), rhs=type_text(rhs), out=type_text(out),
            lhs_dtype=str(lhs.dtype), rhs_dtype=str(rhs.dtype), out_dtype=str(out.dtype),
            preferred=None if preferred is None else str(jax.numpy.dtype(preferred)),
            contracted=math.prod(int(lhs.shape[d]) for d in lc),
            batch=math.prod(int(lhs.shape[d]) for d in lb),
            out_size=math.prod(int(d) for d in out.shape),
            times=run.times, unknown=run.unknown, line=run.line,
            in_loop=any(e.primitive.name in ("scan", "while", "pallas_call") for e in run.outer),
            dims=str(((tuple(lc), tuple(rc)), (tuple(lb), tuple(eqn.params["dimension_numbers"][1][1])))),
            loops=tuple(_loop(e, path) for e in run.outer if e.primitive.name in ("scan", "while")),
            precision=_precision(eqn.params.get("precision")),
            at_most=run.times if run.times is not None else _at_most(run.outer),
        ))
    return found


def _at_most(outer: tuple[Any, ...]) -> int | None:
    """Runs of an equation below `outer` with every `cond` counted as taken, or None under a while or data grid."""
    times = 1
    for eqn in outer:
        if eqn.primitive.name == "cond":
            continue
        runs, _ = times_run((eqn,))
        if runs is None:
            return None
        times *= runs
    return times


def _precision(value: Any) -> str | None:
    """`HIGHEST` for `precision=(HIGHEST, HIGHEST)`, None when neither operand asks for more than DEFAULT."""
    names = [getattr(p, "name", str(p)) for p in (value if isinstance(value, tuple | list) else (value,))
             if p is not None]
    if not names or all(n == "DEFAULT" for n in names):
        return None
    return names[0] if len(set(names)) == 1 else ", ".join(names)


def _loop(eqn: Any, path: Path | None) -> tuple[str, int | None, int | None]:
    """(kind, trips, line) of a loop equation."""
    length = int(eqn.params["length"]) if eqn.primitive.name == "scan" else None
    return eqn.primitive.name, length, learner_line(eqn, path)


def matmuls_of(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> list[Matmul]:
    """Trace `fn(*args)` with `jax.make_jaxpr` and list its matmuls (a grad function: the backward ones too)."""
    return matmuls_in(traced(fn, *args), path=path)


def matmul_flops(found: Iterable[Matmul]) -> int | None:
    """The flops of all the matmuls over all their runs, or None when one runs an unknown number of times."""
    total = 0
    for m in found:
        if m.total_flops is None:
            return None
        total += m.total_flops
    return total


def float32_matmuls(found: Iterable[Matmul]) -> list[Matmul]:
    """The matmuls whose two operands are both float32 (or float64): full-precision work in a mixed-precision step.

    The backward pass of a bfloat16 matmul multiplies a float32 cotangent by a saved bfloat16
    operand, so "no float32 x float32 matmul" is the rule a mixed-precision step keeps, not
    "every matmul is bfloat16 x bfloat16".
    """
    wide = ("float32", "float64")
    return [m for m in found if m.lhs_dtype in wide and m.rhs_dtype in wide]


def repeated_matmuls(found: Iterable[Matmul]) -> list[tuple[Matmul, int]]:
    """Matmuls whose signature (operand and result types) occurs more than once: (first one, count).

    In a backward pass each forward matmul has two partners of other shapes (the gradients of its
    operands), so a forward signature met again is the forward matmul computed a second time.
    """
    found = list(found)
    counts = Counter(m.signature() for m in found)
    firsts: dict[tuple[str, str, str, str], Matmul] = {}
    for m in found:
        firsts.setdefault(m.signature(), m)
    return [(firsts[s], n) for s, n in counts.items() if n > 1]


def mflop(flops: int | float) -> str:
    """`1611 MFLOP`: flops in millions, rounded, as messages quote them."""
    return f"{flops / 1e6:.0f} MFLOP"
