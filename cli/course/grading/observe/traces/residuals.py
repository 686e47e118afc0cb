"""What autodiff keeps for the backward pass of a scan: its saved residuals, each traced to the learner's line.

When a function that runs a `lax.scan` is differentiated, JAX splits the scan in two: a forward
scan that computes the layers and emits, as stacked outputs (`ys`), every value the backward pass
needs, and a scan in the opposite direction (the backward pass) that consumes them. Those stacked
values are the residuals: what the program keeps alive between the two passes, one per step. A
`jax.checkpoint` policy decides which they are (the rest is recomputed in the backward scan).

This reads them from the jaxpr with public API only (`jax._src.ad_checkpoint.saved_residuals` is
private; `jax.ad_checkpoint.print_saved_residuals` only prints): each stacked output of a scan that
a later scan of the other direction consumes, found in every nested jaxpr, traced back inside the
forward body to the equation that made it, looking through `reduce_precision`, checkpoint names,
`jit` and `remat2` (a checkpointed body).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax.extend as jex
import numpy as np

from course.grading.observe.traces.jaxprs import is_var, learner_line, traced
from course.grading.observe.traces.loops import line_text, type_text

__all__ = ["Residual", "describe_residuals", "residuals_of", "scan_residuals"]

# Primitives that pass a value through unchanged for our purpose: the dot output autodiff saves sits
# behind a `reduce_precision`, `checkpoint_name(x, "z")` is a `name` equation, an offloaded one a `device_put`.
_SEE_THROUGH = frozenset({"reduce_precision", "name", "copy", "copy_p", "optimization_barrier", "device_put"})


@dataclass(frozen=True)
class Residual:
    """One value a forward scan saves per step for its backward pass."""

    type: str
    """The per-step type: `float32[512, 256]` (the stacked output has the scan's length in front)."""
    dtype: str
    shape: tuple[int, ...]
    length: int
    """The scan's length: how many of these are kept."""
    source: str
    """`op` (computed in the body), `carry` (the step's carried input, a layer's input),
    `xs` (a slice of the scanned inputs, such as a layer's weights) or `const` (a value the loop closes over)."""
    primitive: str | None
    """For `op`: the primitive that made it (`dot_general`, `tanh`, ...)."""
    name: str | None
    """The `checkpoint_name` it passed through, if any."""
    line: int | None
    """The learner's line of the producing equation."""
    scan_line: int | None
    """The learner's line of the scan."""

    @property
    def nbytes(self) -> int:
        """Bytes of one step's value."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def total_bytes(self) -> int:
        """Bytes over every step: what the stacked output holds."""
        return self.nbytes * self.length

    def origin(self) -> str:
        """`output of dot_general`, `a loop input: the carry, each step's input`, ..."""
        return {
            "carry": "a loop input: the carry, each step's input",
            "xs": "a slice of the scanned inputs",
            "const": "a value the loop closes over",
        }.get(self.source, f"output of {self.primitive}")


def scan_residuals(jaxpr: Any, *, path: Path | None = None) -> list[Residual]:
    """The residuals of every differentiated scan in a (closed) jaxpr and its nested jaxprs, in program order."""
    found = []
    for inner, i, eqn, frames in _walk(getattr(jaxpr, "jaxpr", jaxpr), ()):
        if eqn.primitive.name != "scan":
            continue
        n_carry = int(eqn.params["num_carry"])
        for k, y in enumerate(eqn.outvars[n_carry:]):
            if not _dropped(y) and _scanned_back(inner, i, y, not eqn.params["reverse"], frames):
                found.append(_trace(eqn, n_carry + k, path))
    return found


def residuals_of(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> list[Residual]:
    """Trace `fn(*args)` (a function that computes a gradient) and list what its scans save."""
    return scan_residuals(traced(fn, *args), path=path)


def describe_residuals(found: list[Residual], path: Path | None = None) -> str:
    """`float32[512, 64] (a loop input: ...); float32[512, 256] x6 (outputs of add, mul, tanh; line 9: ...)`."""
    groups: dict[tuple[str, str], list[Residual]] = {}
    for r in found:
        groups.setdefault((r.type, r.source if r.source != "op" else "op"), []).append(r)
    parts = []
    for (type_, source), members in groups.items():
        count = f" x{len(members)}" if len(members) > 1 else ""
        if source != "op":
            parts.append(f"{type_}{count} ({members[0].origin()})")
            continue
        prims = sorted({m.primitive or "?" for m in members})
        what = ("outputs of " if len(members) > 1 else "output of ") + ", ".join(prims)
        names = sorted({m.name for m in members if m.name})
        if names:
            what += f", named {', '.join(repr(n) for n in names)}"
        lines = sorted({m.line for m in members if m.line})
        if lines:
            what += "; " + line_text(lines[0], path) + (f" and {len(lines) - 1} more line(s)" if len(lines) > 1 else "")
        parts.append(f"{type_}{count} ({what})")
    return "; ".join(parts)


# Where an equation sits: (the jaxpr holding the enclosing equation, its index there, that equation), outermost first.
Frames = tuple[tuple[Any, int, Any], ...]


def _walk(jaxpr: Any, frames: Frames) -> Iterator[tuple[Any, int, Any, Frames]]:
    """Every equation of an open jaxpr and its nested jaxprs: (its jaxpr, its index, itself, its frames)."""
    for i, eqn in enumerate(jaxpr.eqns):
        yield jaxpr, i, eqn, frames
        for sub in jex.core.jaxprs_in_params(eqn.params):
            yield from _walk(getattr(sub, "jaxpr", sub), (*frames, (jaxpr, i, eqn)))


def _dropped(var: Any) -> bool:
    """An output nobody binds (`_` in a printed jaxpr)."""
    return type(var).__name__ == "DropVar"


def _scanned_back(jaxpr: Any, start: int, var: Any, reverse: bool, frames: Frames = ()) -> bool:
    """Whether a scan of direction `reverse` after equation `start` takes `var`, here, inside a later equation,
    or, when `var` leaves its jaxpr as an output of a call (a `jit` whose forward and backward halves autodiff
    split in two), after the call in the enclosing jaxpr."""
    if frames and any(v is var for v in jaxpr.outvars):
        outer, index, call = frames[-1]
        if call.primitive.name not in ("scan", "while", "cond") and len(jaxpr.outvars) == len(call.outvars):
            for pos, v in enumerate(jaxpr.outvars):
                if v is var and _scanned_back(outer, index, call.outvars[pos], reverse, frames[:-1]):
                    return True
    for eqn in jaxpr.eqns[start + 1:]:
        positions = [j for j, v in enumerate(eqn.invars) if v is var]
        if not positions:
            continue
        if eqn.primitive.name == "scan" and bool(eqn.params["reverse"]) == reverse:
            return True
        for sub in jex.core.jaxprs_in_params(eqn.params):
            inner = getattr(sub, "jaxpr", sub)
            if len(inner.invars) != len(eqn.invars):
                continue
            if any(_scanned_back(inner, -1, inner.invars[j], reverse) for j in positions):
                return True
    return False


def _trace(scan: Any, out_index: int, path: Path | None) -> Residual:
    """The residual made by the forward `scan`'s output `out_index`, traced to its origin in the body."""
    body = scan.params["jaxpr"].jaxpr
    aval = scan.outvars[out_index].aval
    per_step = aval.update(shape=tuple(aval.shape[1:])) if hasattr(aval, "update") else aval
    source, eqn, name = _origin(body, body.outvars[out_index])
    n_consts, n_carry = int(scan.params["num_consts"]), int(scan.params["num_carry"])
    if source == "invar":
        index = body.invars.index(eqn)
        source = "const" if index < n_consts else "carry" if index < n_consts + n_carry else "xs"
        eqn = None
    return Residual(
        type=type_text(per_step), dtype=str(aval.dtype), shape=tuple(int(d) for d in aval.shape[1:]),
        length=int(scan.params["length"]), source=source,
        primitive=None if eqn is None else eqn.primitive.name, name=name,
        line=None if eqn is None else learner_line(eqn, path), scan_line=learner_line(scan, path),
    )


def _origin(jaxpr: Any, var: Any, name: str | None = None, depth: int = 0) -> tuple[str, Any, str | None]:
    """("op", producing equation, name), ("invar", the body's input variable, name) or ("const", None, name)."""
    if not is_var(var):
        return "const", None, name
    if var in jaxpr.invars or var in jaxpr.constvars:
        return ("invar", var, name) if var in jaxpr.invars else ("const", None, name)
    producer = next((e for e in jaxpr.eqns if any(o is var for o in e.outvars)), None)
    if producer is None or depth > 32:
        return "const", None, name
    prim = producer.primitive.name
    if prim in _SEE_THROUGH and producer.invars:
        if prim == "name":
            name = str(producer.params.get("name", name))
        return _origin(jaxpr, producer.invars[0], name, depth + 1)
    subs = [getattr(s, "jaxpr", s) for s in jex.core.jaxprs_in_params(producer.params)]
    if prim != "scan" and len(subs) == 1 and len(subs[0].outvars) == len(producer.outvars):
        inner = subs[0]
        k = next(i for i, o in enumerate(producer.outvars) if o is var)
        kind, found, name = _origin(inner, inner.outvars[k], name, depth + 1)
        if kind == "invar" and len(inner.invars) == len(producer.invars):
            return _origin(jaxpr, producer.invars[inner.invars.index(found)], name, depth + 1)
        if kind != "invar":
            return kind, found, name
    return "op", producer, name
