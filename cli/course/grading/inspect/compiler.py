"""The compiler section: what a call's program costs, read from XLA and from the jaxpr.

Each call is traced once and compiled once (`jax.jit(...).trace(...)`, then `compile_lowered`), so
every number describes one program: `memory_analysis()` (temp, arguments, outputs), the compiled
HLO's size, the jaxpr's size, its loops with their trip counts and carries, every matmul with its
dtypes, learner line and how many times it runs (`course.grading.observe.traces.matmuls`), and, for a call that
differentiates a scan, what the forward pass saves for the backward pass (`course.grading.observe.traces.residuals`).
Nothing is run. The numbers are those the Part 5 graders compare, so a learner sees them move
when a fix lands.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax

from course.grading.inspect.calls import Call, CallError
from course.grading.inspect.report import each_call, source_lines
from course.grading.observe.calls.programs import compile_lowered
from course.grading.observe.traces.loops import eqn_runs, jaxpr_size, loops_in
from course.grading.observe.traces.matmuls import Matmul, matmul_flops, matmuls_in
from course.grading.observe.traces.residuals import Residual, scan_residuals

__all__ = ["observe"]

MAX_ROWS = 12
"""Matmul and residual rows shown one by one (after grouping equal ones); the rest are counted."""


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: memory, program sizes, loops, matmuls and saved residuals of its one compiled program."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The compiler report of one call, from one trace and one compile."""
    fn, arrays, _ = call.traced()
    traced = jax.jit(fn).trace(*arrays)
    program = compile_lowered(traced.lower(), "call")
    memory = program.memory
    found = matmuls_in(traced.jaxpr, path=path)
    local = [_per_device(run.eqn) for run in eqn_runs(traced.jaxpr, path=path) if run.primitive == "dot_general"]
    residuals = scan_residuals(traced.jaxpr, path=path)
    loops = [{"kind": lp.kind, "length": lp.length, "reverse": lp.reverse, "unroll": lp.unroll,
              "carry": list(lp.carry), "times": lp.times, "line": lp.line} for lp in loops_in(traced.jaxpr, path=path)]
    matmuls = _grouped([_matmul(m, each) for m, each in zip(found, local, strict=True)])
    saved = _grouped([_residual(r) for r in residuals])
    lines = {r["line"] for r in matmuls + saved + loops if r.get("line")}
    return {
        "memory": {"temp": memory.temp, "argument": memory.argument, "output": memory.output,
                   "alias": memory.alias, "peak": memory.peak},
        "hlo_instructions": program.hlo_size,
        "jaxpr_equations": jaxpr_size(traced.jaxpr),
        "cost_flops": program.flops,
        "loops": loops,
        "matmul_flops": _total(found, local),
        "matmuls": matmuls[:MAX_ROWS],
        "more_matmuls": max(0, len(matmuls) - MAX_ROWS),
        "residuals": saved[:MAX_ROWS],
        "more_residuals": max(0, len(saved) - MAX_ROWS),
        "residual_bytes": sum(r.total_bytes for r in residuals),
        "source": source_lines(path, lines),
    }


def _matmul(m: Matmul, local: tuple[list[str], int] | None) -> dict[str, Any]:
    """One matmul, as plain data: at the shapes one device multiplies, and the global ones when they differ."""
    found = {"lhs": m.lhs, "rhs": m.rhs, "out": m.out, "preferred": m.preferred, "flops": m.flops,
             "times": m.times, "total_flops": m.total_flops, "unknown": m.unknown, "line": m.line,
             "loops": [list(lp) for lp in m.loops], "dims": m.dims,
             "mixed": m.preferred is not None and not m.lhs_dtype == m.rhs_dtype == m.preferred}
    if local is not None:
        (found["lhs"], found["rhs"], found["out"]), found["flops"] = local
        found["total_flops"] = None if m.times is None else local[1] * m.times
        found["global"] = m.describe()
    return found


def _per_device(eqn: Any) -> tuple[list[str], int] | None:
    """([lhs, rhs, out] at the shapes one device holds, flops of one run there) for a matmul of arrays sharded
    in explicit mode, whose jaxpr types are global; None when every operand is whole on each device."""
    avals = [eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval]
    try:
        shapes = [tuple(a.sharding.shard_shape(a.shape)) for a in avals]
    except Exception:  # noqa: BLE001 - no sharding in the type (inside shard_map, or no mesh): shapes are local
        return None
    if all(s == tuple(a.shape) for s, a in zip(shapes, avals, strict=True)):
        return None
    (contracted, _), _ = eqn.params["dimension_numbers"]
    flops = 2 * math.prod(shapes[2]) * math.prod(shapes[0][d] for d in contracted)
    texts = [f"{a.dtype}[{', '.join(str(d) for d in s)}]" for a, s in zip(avals, shapes, strict=True)]
    return texts, flops


def _total(found: list[Matmul], local: list[tuple[list[str], int] | None]) -> int | None:
    """The matmul work of one device over every run, or None when a trip count is unknown."""
    if any(m.times is None for m in found):
        return matmul_flops(found)
    return sum((each[1] if each is not None else m.flops) * (m.times or 0)
               for m, each in zip(found, local, strict=True))


def _residual(r: Residual) -> dict[str, Any]:
    """One saved residual, as plain data."""
    return {"type": r.type, "origin": r.origin(), "name": r.name, "line": r.line, "length": r.length,
            "bytes": r.nbytes, "scan_line": r.scan_line}


def _grouped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Equal rows once each, in first-seen order, with a `count` (a Python loop's 16 equal matmuls: one row)."""
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = repr(sorted(row.items()))
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = {**row, "count": 1}
    return list(groups.values())
