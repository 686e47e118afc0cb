"""A shadow interpreter: run a kernel's jaxpr over its grid in plain Python and record what it does.

`trace_kernel(call)` walks the kernel of a `KernelCall` once per grid point, in the order the
TPU runs them (the last grid axis fastest). Integer and boolean arithmetic is exact (see
`course.grading.observe.traces.scalars`), so grid indices, loop counters, slot numbers and `pl.when` conditions
take their real values; floating-point data is left unknown. It follows `cond`, `scan` (a
`fori_loop`), `while`, `run_scoped`, `jit` and Python-unrolled loops, `pltpu.emit_pipeline`'s
machinery included, and records in program order every read and write of a ref and every DMA
start and wait, each as a concrete window of a buffer, plus every other primitive it executes.
Nothing is compiled, a trace costs milliseconds, and a window that leaves its buffer is
recorded as it is, never clamped. Semaphores are not simulated here: the replay of
`course.grading.observe.kernels.dma_replay` works out which copy a wait answers, and whether it ever returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.extend as jex
import numpy as np

from course.grading.observe.kernels.kernels import KernelCall
from course.grading.observe.kernels.trace_model import (
    Buffer,
    Event,
    TraceUnsupported,
    Window,
    compose_window,
    numpy_index,
)
from course.grading.observe.kernels.trace_rules import RULES
from course.grading.observe.traces.jaxprs import learner_line
from course.grading.observe.traces.scalars import apply, const_value, is_known, read_var, unknown_like

__all__ = ["Buffer", "Event", "KernelTrace", "TraceUnsupported", "Window", "evaluate_jaxpr", "trace_kernel"]

# Executing more equations than this means a runaway loop: the trace gives up with a sentence.
MAX_EQUATIONS = 400_000
_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "custom_vjp_call_jaxpr", "remat", "checkpoint", "custom_lin"})
_IGNORED = frozenset({"debug_callback", "debug_print", "delay", "trace_start", "trace_stop"})


@dataclass
class KernelTrace:
    """What one kernel did over its whole grid: its buffers and its events in program order."""

    call: KernelCall | None
    grid: tuple[int, ...]
    buffers: list[Buffer]
    events: list[Event]

    def of(self, *kinds: str) -> list[Event]:
        """The events of the given kinds, in program order."""
        return [e for e in self.events if e.kind in kinds]

    def arg(self, position: int) -> Buffer:
        """The buffer of kernel argument `position`."""
        return next(b for b in self.buffers if b.arg == position)

    def buffer(self, name: str) -> Buffer:
        """The argument buffer called `name`."""
        return next(b for b in self.buffers if b.name == name and b.arg is not None)

    def accesses(self, buffer: Buffer, *kinds: str) -> list[Event]:
        """Reads, writes and updates of `buffer` (or only the given kinds)."""
        kinds = kinds or ("read", "write", "update")
        return [e for e in self.events if e.kind in kinds and e.window is not None and e.window.buffer is buffer]

    def ops(self, prim: str | None = None) -> list[Event]:
        """Executed primitives other than ref accesses and DMAs, optionally of one kind."""
        return [e for e in self.events if e.kind == "op" and (prim is None or e.prim == prim)]

    def outside(self) -> list[Event]:
        """Events whose window (or DMA source or destination) reaches outside its buffer."""
        return [e for e in self.events if any(w is not None and not w.in_bounds for w in (e.window, e.src, e.dst))]

    def unset_reads(self, buffers: Iterable[Buffer] | None = None) -> list[Event]:
        """For each of `buffers` (by default the call's outputs that alias no input, and its scratch), its first read
        (or update) that takes in elements no earlier write or DMA has set: memory the kernel never set holds
        garbage (NaN under the strict interpreter). Windows the trace does not know exactly are left out."""
        if buffers is None:
            buffers = self.state_buffers()
        written = {id(b): np.zeros(b.shape, bool) for b in buffers if not b.is_semaphore}
        found: dict[int, Event] = {}
        for event in self.events:
            target = event.dst if event.kind == "dma_start" else event.window
            mask = None if target is None else written.get(id(target.buffer))
            index = None if mask is None else numpy_index(target)
            if index is None:
                continue
            key = id(target.buffer)
            if event.kind in ("read", "update") and key not in found and not mask[index].all():
                found[key] = event
            if event.kind in ("write", "update", "dma_start"):
                mask[index] = True
        return sorted(found.values(), key=lambda e: e.order)

    def state_buffers(self) -> list[Buffer]:
        """The buffers a kernel must set before it reads them: its outputs that alias no input, and its scratch."""
        call = self.call
        if call is None:
            return []
        first_out = call.num_index + call.num_inputs
        aliased = {first_out + out for out in call.input_output_aliases.values()}
        return [b for b in self.buffers if b.arg is not None and b.arg >= first_out and b.arg not in aliased]


def trace_kernel(call: KernelCall, *, prefetch: Sequence[Any] = (), max_equations: int = MAX_EQUATIONS) -> KernelTrace:
    """Run the kernel of `call` over its grid, recording every access, DMA and primitive.

    `prefetch` gives the values of the scalar-prefetch operands (NumPy integer arrays), which
    index maps and kernels may read; without them those reads are unknown.
    """
    machine = _Machine(call.path, max_equations)
    grid = tuple(int(g) for g in call.grid)
    args = [machine.argument(var, call.arg_names[i], i) for i, var in enumerate(call.jaxpr.invars)]
    for buf, value in zip(args, prefetch, strict=False):
        machine.fill(buf, np.asarray(value))
    machine.grid = grid
    for point in itertools.product(*(range(g) for g in grid)):
        machine.step = tuple(point)
        machine.run(call.jaxpr, [], args, None)
    return KernelTrace(call=call, grid=grid, buffers=machine.buffers, events=machine.events)


def evaluate_jaxpr(closed: Any, *args: Any) -> list[Any]:
    """Evaluate a small closed jaxpr (an index map) on NumPy integers, without compiling.

    Ref arguments (scalar-prefetch tables) are given as NumPy arrays and read exactly.
    """
    machine = _Machine(None, MAX_EQUATIONS)
    jaxpr = getattr(closed, "jaxpr", closed)
    values = []
    for var, arg in zip(jaxpr.invars, args, strict=True):
        if _is_ref(var.aval):
            buf = machine.argument(var, "table", len(values))
            machine.fill(buf, np.asarray(arg))
            values.append(buf)
        else:
            values.append(np.asarray(arg, dtype=np.dtype(var.aval.dtype)))
    consts = [const_value(c) for c in getattr(closed, "consts", ())]
    return machine.run(jaxpr, consts, values, None)


def _is_ref(aval: Any) -> bool:
    """Whether an abstract value is a ref (it has an inner aval)."""
    return hasattr(aval, "inner_aval")


def _space(aval: Any) -> str:
    """The memory space of a ref's type as a lower-case word."""
    space = getattr(aval, "memory_space", None)
    if space is None:
        return "default"
    return str(getattr(space, "value", space)).lower()


def _dtype(aval: Any) -> np.dtype | None:
    """The NumPy dtype of a ref, None for semaphores."""
    try:
        return np.dtype(aval.dtype)
    except TypeError:
        return None


@dataclass
class _Machine:
    """The interpreter's state: buffers, events, the grid point and the loop iterations."""

    path: Path | None
    budget: int
    grid: tuple[int, ...] = ()
    step: tuple[int, ...] = ()
    iters: tuple[int, ...] = ()
    buffers: list[Buffer] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    lines: dict[int, int | None] = field(default_factory=dict)
    executed: int = 0

    def argument(self, var: Any, name: str, position: int) -> Buffer:
        """A buffer for a kernel argument."""
        return self._buffer(var.aval, name, position, None, f"argument {position}")

    def _buffer(self, aval: Any, name: str, arg: int | None, line: int | None, site: str) -> Buffer:
        """Make and record a buffer; integer buffers get storage the trace can know."""
        dtype = _dtype(aval)
        shape = tuple(getattr(aval, "shape", ()))
        content = known = None
        if dtype is not None and (np.issubdtype(dtype, np.integer) or dtype == np.bool_):
            content, known = np.zeros(shape, dtype), np.zeros(shape, bool)
        buf = Buffer(index=len(self.buffers), name=name, space=_space(aval), dtype=dtype, shape=shape,
                     arg=arg, line=line, site=site, content=content, known=known)
        self.buffers.append(buf)
        return buf

    def fill(self, buf: Buffer, value: np.ndarray) -> None:
        """Give a buffer known contents (a scalar-prefetch table)."""
        if buf.content is not None and value.shape == buf.shape:
            buf.content[...] = value
            buf.known[...] = True

    def line(self, eqn: Any, parent: int | None) -> int | None:
        """The learner's line of `eqn`, else the enclosing equation's (cached per equation)."""
        key = id(eqn)
        if key not in self.lines:
            self.lines[key] = learner_line(eqn, self.path) if self.path is not None else None
        return self.lines[key] or parent

    def record(self, kind: str, eqn: Any, line: int | None, **fields: Any) -> None:
        """Append one event at the current grid point and loop iterations."""
        self.events.append(Event(kind=kind, order=len(self.events), step=self.step, iters=self.iters,
                                 line=line, prim=eqn.primitive.name, eqn=eqn, **fields))

    def run(self, jaxpr: Any, consts: Iterable[Any], args: Iterable[Any], parent: int | None) -> list[Any]:
        """Evaluate `jaxpr` on `args`, recording events; returns its outputs."""
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        for eqn in jaxpr.eqns:
            self.executed += 1
            if self.executed > self.budget:
                raise TraceUnsupported(f"the kernel runs more than {self.budget} operations; does a loop never end?")
            line = self.line(eqn, parent)
            outs = self.equation(eqn, [read_var(v, env) for v in eqn.invars], line)
            env.update(zip(eqn.outvars, outs, strict=True))
        return [read_var(v, env) for v in jaxpr.outvars]

    def equation(self, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
        """The outputs of one equation, following control flow and recording effects."""
        prim = eqn.primitive.name
        rule = RULES.get(prim)
        if rule is not None:
            return rule(self, eqn, vals, line)
        if prim in _IGNORED:
            return [unknown_like(o) for o in eqn.outvars]
        outs = None if prim in _CALLS else apply(eqn, vals)
        if outs is None:
            body = _inline_body(eqn)
            if body is not None:  # a jit, custom_jvp or checkpoint around more of the kernel
                consts = [const_value(c) for c in getattr(body, "consts", ())]
                return self.run(getattr(body, "jaxpr", body), consts, vals, line)
            outs = [unknown_like(o) for o in eqn.outvars]
        first = eqn.outvars[0].aval if eqn.outvars else None
        self.record("op", eqn, line, shape=tuple(getattr(first, "shape", ())), dtype=getattr(first, "dtype", None))
        return outs

    def window(self, buf: Buffer, transforms: Any, env_values: dict[int, Any]) -> Window:
        """The concrete window that a chain of indexers selects in `buf`."""
        return compose_window(buf, transforms, env_values)

    def load(self, win: Window, out_var: Any) -> Any:
        """The value read through `win`: known integers where the trace knows them, else Unknown."""
        buf = win.buffer
        index = numpy_index(win)
        if buf.content is None or index is None or not win.in_bounds:
            return unknown_like(out_var)
        if not buf.known[index].all():
            return unknown_like(out_var)
        return np.asarray(buf.content[index]).reshape(out_var.aval.shape).astype(buf.dtype)

    def store(self, win: Window, value: Any, add: bool = False) -> None:
        """Write `value` through `win` into the trace's knowledge of integer buffers."""
        buf = win.buffer
        index = numpy_index(win)
        if buf.content is None:
            return
        if index is None or not win.in_bounds:
            if index is None:
                buf.known[...] = False  # a write somewhere we cannot say: forget everything
            return
        if is_known(value) and (not add or buf.known[index].all()):
            target = buf.content[index]
            new = np.broadcast_to(value.reshape(np.shape(target)) if value.size == np.size(target) else value,
                                  np.shape(target))
            buf.content[index] = (target + new) if add else new
            buf.known[index] = True
        else:
            buf.known[index] = False

    def scoped(self, aval: Any, position: int, line: int | None, eqn: Any) -> Buffer:
        """A fresh `pl.run_scoped` allocation."""
        return self._buffer(aval, f"scoped buffer {position}", None, line, f"run_scoped {id(eqn)} #{position}")


def _inline_body(eqn: Any) -> Any:
    """The one jaxpr a call-like equation runs on exactly its operands, if there is one."""
    for sub in jex.core.jaxprs_in_params(eqn.params):
        inner = getattr(sub, "jaxpr", sub)
        if len(inner.invars) == len(eqn.invars) and len(inner.outvars) == len(eqn.outvars):
            return sub
    return None
