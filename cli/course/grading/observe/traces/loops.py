"""How many times each equation of a jaxpr runs, the loops that decide it, and how big a jaxpr is.

A jaxpr is written once but its loop bodies run many times. A `scan` of length n runs its body n
times (a `fori_loop` with Python-int bounds traces to one), a `pallas_call` runs its kernel once
per grid step, and a `jit`, `remat2` or custom-derivative call runs its body once per run of the
call. A `while_loop` (a `fori_loop` with traced bounds) and a `cond` make the count unknown: the
trip count or the branch is data. `eqn_runs` gives every equation with how many times it runs, or
why that cannot be known, and the learner's line, so matmul work, collectives or loads can be
multiplied out by one rule.
"""

from __future__ import annotations

import linecache
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.observe.traces.jaxprs import learner_line, traced, walk_eqns

__all__ = [
    "EqnRuns", "Loop", "eqn_runs", "jaxpr_size", "line_text", "loops_in", "times_run", "traced_jaxpr", "type_text",
]


@dataclass(frozen=True)
class EqnRuns:
    """One equation of a jaxpr, where it sits, and how many times it runs per call of the traced function."""

    eqn: Any
    """The jaxpr equation itself (`eqn.primitive.name`, `eqn.params`, `eqn.invars`, `eqn.outvars`)."""
    outer: tuple[Any, ...]
    """The equations enclosing it, outermost first (a `jit`, then a `scan`, ...)."""
    line: int | None
    """The learner's line that made it, when it comes from their file."""
    times: int | None
    """The product of the enclosing trip counts, or None when one of them is unknown."""
    unknown: str | None
    """Why `times` is None, in words a message can use: `inside a while_loop at line 12`."""

    @property
    def primitive(self) -> str:
        """The equation's primitive name: `dot_general`, `scan`, `psum`, ..."""
        return str(self.eqn.primitive.name)


@dataclass(frozen=True)
class Loop:
    """A `scan` or `while` equation: its trip count, direction, carry and line."""

    kind: str
    """`scan` or `while`."""
    length: int | None
    """Trips per run of the loop: a scan's length; None for a while_loop (data decides)."""
    reverse: bool
    """A scan that walks its inputs from the end (the backward pass of a forward scan)."""
    unroll: int
    """Scan iterations XLA gets written out per trip of its loop (1 for a while_loop)."""
    carry: tuple[str, ...]
    """The carried values' types, as `type_text` writes them: `float32[512, 64]`."""
    times: int | None
    """How many times the loop itself runs (inside another loop, more than once)."""
    line: int | None
    eqn: Any

    def carry_dtypes(self) -> set[str]:
        """The dtypes among the carried values (`float32`, `int32`, ...)."""
        return {t.split("[", 1)[0] for t in self.carry}


def traced_jaxpr(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`jax.make_jaxpr(fn)(*args, **kwargs)`: the closed jaxpr the helpers here walk (`traced`, so in a judge check
    the executor traces the learner's function and the trace is read here)."""
    if not kwargs:
        return traced(fn, *args)
    return jax.make_jaxpr(fn)(*args, **kwargs)


def times_run(outer: tuple[Any, ...], path: Path | None = None) -> tuple[int | None, str | None]:
    """(how many times an equation below `outer` runs, None) or (None, why that is unknown)."""
    times = 1
    for eqn in outer:
        name = eqn.primitive.name
        if name in ("while", "cond"):
            line = learner_line(eqn, path)
            what = "a while_loop" if name == "while" else "a cond"
            return None, f"inside {what}" + (f" at line {line}" if line else "")
        if name == "scan":
            times *= int(eqn.params["length"])
        elif name == "pallas_call":
            steps = _grid_steps(eqn)
            if steps is None:
                return None, "inside a pallas_call whose grid is data"
            times *= steps
    return times, None


def eqn_runs(jaxpr: Any, *, path: Path | None = None, into_kernels: bool = True) -> Iterator[EqnRuns]:
    """Every equation of a (closed) jaxpr and its nested jaxprs, in program order, with how often it runs."""
    for eqn, outer in walk_eqns(jaxpr, into_kernels=into_kernels):
        times, unknown = times_run(outer, path)
        yield EqnRuns(eqn, outer, learner_line(eqn, path), times, unknown)


def loops_in(jaxpr: Any, *, path: Path | None = None) -> list[Loop]:
    """Every `scan` and `while` equation of a jaxpr, nested ones included, in program order."""
    found = []
    for run in eqn_runs(jaxpr, path=path):
        eqn = run.eqn
        if run.primitive == "scan":
            n_carry = int(eqn.params["num_carry"])
            carry = tuple(type_text(v.aval) for v in eqn.outvars[:n_carry])
            unroll = eqn.params.get("unroll", 1)
            found.append(Loop("scan", int(eqn.params["length"]), bool(eqn.params["reverse"]),
                              int(eqn.params["length"]) if unroll is True else int(unroll), carry,
                              run.times, run.line, eqn))
        elif run.primitive == "while":
            carry = tuple(type_text(v.aval) for v in eqn.outvars)
            found.append(Loop("while", None, False, 1, carry, run.times, run.line, eqn))
    return found


def jaxpr_size(jaxpr: Any) -> int:
    """How many equations a jaxpr holds, counting those of every nested jaxpr (loop bodies once)."""
    return sum(1 for _ in walk_eqns(jaxpr))


def type_text(aval: Any) -> str:
    """`float32[512, 64]` for an abstract value (`float32[]` for a scalar)."""
    dtype = getattr(aval, "dtype", None)
    shape = tuple(getattr(aval, "shape", ()))
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


def line_text(line: int | None, path: Path | None) -> str:
    """`line 9: z = x @ w["w1"]` as the graded file has it, `line 9` without the text, `an unknown line`."""
    if line is None:
        return "an unknown line"
    text = linecache.getline(str(path), line).strip() if path is not None else ""
    return f"line {line}: {text}" if text else f"line {line}"


def _grid_steps(eqn: Any) -> int | None:
    """How many grid steps a `pallas_call` runs its kernel for (1 without a grid; None for a traced grid)."""
    grid = getattr(eqn.params.get("grid_mapping"), "grid", ())
    return math.prod(int(g) for g in grid) if all(isinstance(g, int) for g in grid) else None
