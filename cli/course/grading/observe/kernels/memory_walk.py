"""The walk behind `course.grading.observe.kernels.memory`: refs, accesses and DMAs of a kernel jaxpr, in program order.

Every ref variable is mapped to the `RefInfo` of the kernel argument or scoped buffer it stands
for, through `run_scoped`, `cond`, loops and inner `jit`s (the mapping of `course.grading.observe.kernels.kernels`).
Each DMA start and wait is recorded as a `DmaEvent` with its bytes, its loops and whether a
`pl.when` guards it; `course.grading.observe.kernels.semaphores` pairs them the way a DMA semaphore counts.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.extend as jex
import numpy as np
from jax import tree_util

from course.grading.observe.kernels.kernels import LOADS, STORES, UPDATES
from course.grading.observe.traces.jaxprs import learner_line, region_of, sub_env

__all__ = ["DmaEvent", "MemoryAccess", "RefInfo", "SPACE_WORDS", "Walker"]

# How each space reads in a message; a blocked ("default") operand is a VMEM block on a TPU.
SPACE_WORDS = {"any": "ANY", "hbm": "HBM", "vmem": "VMEM", "smem": "SMEM", "default": "VMEM block",
               "semaphore_mem": "semaphore memory"}
# Primitives whose body runs more than once: a wait in the body also answers a later start.
LOOPS = frozenset({"scan", "while"})


@dataclass(frozen=True)
class RefInfo:
    """A ref the kernel can touch: one of its arguments, or a buffer made by `pl.run_scoped`."""

    index: int
    name: str
    space: str  # "any", "hbm", "vmem", "smem", "semaphore_mem" or "default" (a blocked operand)
    dtype: np.dtype | None  # None for a semaphore
    shape: tuple[int, ...]
    arg: int | None  # kernel argument position; None for a scoped buffer
    line: int | None  # for a scoped buffer, the learner's line that made it

    def describe(self) -> str:
        """'`x_hbm_ref` (any, float32[16, 128])', or 'the vmem float32[8, 128] buffer made at line 9'."""
        kind = "semaphore" if self.dtype is None else f"{self.dtype.name}{list(self.shape)}"
        space = SPACE_WORDS.get(self.space, self.space)
        if self.arg is not None:
            return f"`{self.name}` ({space}, {kind})"
        return f"the {space} {kind} buffer made" + (f" at line {self.line}" if self.line else "")


@dataclass(frozen=True)
class MemoryAccess:
    """One load, store or read-modify-write of a ref, with the ref's memory space."""

    ref: RefInfo
    kind: str  # "load", "store" or "update"
    shape: tuple[int, ...]  # shape of the value read or written
    region: Any  # the indexed region as in `course.grading.observe.kernels.kernels`, None if unknown
    line: int | None
    order: int

    @property
    def space(self) -> str:
        """The memory space of the ref accessed."""
        return self.ref.space


def _space(aval: Any) -> str:
    """The memory space of a ref's type as a lower-case word."""
    space = getattr(aval, "memory_space", None)
    if space is None:
        return "default"
    return str(getattr(space, "value", space)).lower()


@dataclass
class DmaEvent:
    """A DMA start or wait found by the walk, before `course.grading.observe.kernels.semaphores` matches them."""

    src: RefInfo
    dst: RefInfo
    sem: RefInfo | None
    dst_region: Any
    line: int | None
    order: int
    kind: str  # "start" or "wait"
    loops: tuple[tuple[int, int | None], ...]  # (loop id, trip count or None) around the event
    src_region: Any = None
    nbytes: int | None = None  # the bytes of the descriptor: what a start adds, what a wait takes
    optional: bool = False  # inside a `cond` (`pl.when`): it may not run every time
    sem_region: Any = None  # the element of a semaphore array it signals or waits on (`sems.at[0]`)

    @property
    def times(self) -> int:
        """How many times the event runs: the product of the known lengths of its loops."""
        return math.prod(n for _, n in self.loops if n is not None)

    def loop_ids(self) -> set[int]:
        """The ids of the loops around the event."""
        return {i for i, _ in self.loops}


@dataclass
class Walker:
    """State of one walk over a kernel jaxpr and the jaxprs nested in it."""

    path: Path | None
    refs: list[RefInfo] = field(default_factory=list)
    accesses: list[MemoryAccess] = field(default_factory=list)
    starts: list[DmaEvent] = field(default_factory=list)
    waits: list[DmaEvent] = field(default_factory=list)
    counter: Counter[str] = field(default_factory=Counter)
    loops: tuple[tuple[int, int | None], ...] = ()
    optional: bool = False

    def new_ref(self, var: Any, name: str, arg: int | None, line: int | None) -> RefInfo:
        """Record a ref made by the kernel's signature or a `run_scoped`."""
        aval = var.aval
        info = RefInfo(index=len(self.refs), name=name, space=_space(aval),
                       dtype=_dtype(aval),
                       shape=tuple(getattr(aval, "shape", ())), arg=arg, line=line)
        self.refs.append(info)
        return info

    def walk(self, jaxpr: Any, env: dict[Any, RefInfo], parent_line: int | None) -> None:
        """Record the accesses and DMAs of `jaxpr`, whose ref variables are mapped by `env`."""
        defs: dict[Any, Any] = {}
        for eqn in jaxpr.eqns:
            prim = eqn.primitive.name
            line = learner_line(eqn, self.path) or parent_line
            if prim == "program_id":
                defs[eqn.outvars[0]] = ("program_id", eqn.params.get("axis"))
            if prim in LOADS | STORES | UPDATES:
                self._access(eqn, env, defs, line)
            elif prim in ("dma_start", "dma_wait"):
                self._dma(eqn, env, defs, line)
            for sub in jex.core.jaxprs_in_params(eqn.params):
                inner = getattr(sub, "jaxpr", sub)
                nested = sub_env(eqn, inner, env) if env else {}
                if prim == "run_scoped":
                    for i, var in enumerate(inner.invars):
                        nested[var] = self.new_ref(var, f"scoped buffer {i}", None, line)
                outer = self.loops, self.optional
                if prim in LOOPS:
                    self.counter["loop"] += 1
                    trip = eqn.params.get("length") if prim == "scan" else None
                    self.loops = (*self.loops, (self.counter["loop"], trip))
                self.optional = self.optional or prim == "cond"
                self.walk(inner, nested, line)
                self.loops, self.optional = outer

    def _access(self, eqn: Any, env: dict[Any, RefInfo], defs: dict[Any, Any], line: int | None) -> None:
        """Record one load, store or update of a known ref."""
        prim, ref = eqn.primitive.name, eqn.invars[0]
        if isinstance(ref, jex.core.Literal) or ref not in env:
            return
        if prim.startswith("masked_"):
            transforms = tree_util.tree_unflatten(eqn.params["args_tree"], eqn.invars)[1]
        else:
            transforms = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars[1 if prim == "get" else 2:])
        kind = "load" if prim in LOADS else "store" if prim in STORES else "update"
        value = eqn.outvars[0] if kind == "load" else eqn.invars[1]
        self.counter["order"] += 1
        self.accesses.append(MemoryAccess(
            ref=env[ref], kind=kind, shape=tuple(getattr(value.aval, "shape", ())),
            region=region_of(transforms, tuple(ref.aval.shape), defs), line=line,
            order=self.counter["order"]))

    def _dma(self, eqn: Any, env: dict[Any, RefInfo], defs: dict[Any, Any], line: int | None) -> None:
        """Record one DMA start or wait whose source and destination are known refs."""
        src, dst, sem, _, _ = eqn.params["tree"].unflatten(eqn.invars)
        src_var, dst_var, sem_var = (getattr(r, "ref", r) for r in (src, dst, sem))
        if any(isinstance(v, jex.core.Literal) or v not in env for v in (src_var, dst_var)):
            return
        region = region_of(getattr(dst, "transforms", ()), tuple(dst_var.aval.shape), defs)
        src_region = region_of(getattr(src, "transforms", ()), tuple(src_var.aval.shape), defs)
        self.counter["order"] += 1
        kind = "start" if eqn.primitive.name == "dma_start" else "wait"
        event = DmaEvent(src=env[src_var], dst=env[dst_var], sem=env.get(sem_var), dst_region=region,
                       line=line, order=self.counter["order"], kind=kind, loops=self.loops,
                       nbytes=_nbytes(src_var, getattr(src, "transforms", ())), optional=self.optional,
                       src_region=src_region, sem_region=_sem_region(sem, sem_var, defs))
        (self.starts if kind == "start" else self.waits).append(event)


def _sem_region(sem: Any, sem_var: Any, defs: dict[Any, Any]) -> Any:
    """Which element of a semaphore array a DMA uses, as a region (None when it is not known)."""
    shape = tuple(getattr(getattr(sem_var, "aval", None), "shape", ()) or ())
    return region_of(getattr(sem, "transforms", ()), shape, defs)


def _nbytes(var: Any, transforms: Any) -> int | None:
    """The bytes a DMA descriptor moves: its source ref's shape after indexing, times the item size."""
    try:
        aval = var.aval
        for t in transforms or ():
            aval = t.transform_type(aval)
        return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize
    except (AttributeError, TypeError, ValueError):
        return None


def _dtype(aval: Any) -> np.dtype | None:
    """The NumPy dtype a ref holds, or None for a semaphore (whose dtype NumPy does not know)."""
    try:
        return np.dtype(aval.dtype)
    except TypeError:
        return None
