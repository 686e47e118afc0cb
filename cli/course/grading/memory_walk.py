"""The walk behind `course.grading.memory`: refs, accesses and DMAs of a kernel jaxpr, in program order.

Every ref variable is mapped to the `RefInfo` of the kernel argument or scoped buffer it stands
for, through `run_scoped`, `cond`, loops and inner `jit`s (the mapping of `course.grading.kernels`).
DMA starts and waits are then paired: a wait answers the oldest unanswered start on its
semaphore, and a loop that waits on a semaphore answers the starts it leaves for its next turn.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.extend as jex
import numpy as np
from jax import tree_util

from course.grading.jaxprs import learner_line, region_of, sub_env
from course.grading.kernels import LOADS, STORES, UPDATES

__all__ = ["Dma", "MemoryAccess", "RefInfo", "SPACE_WORDS", "Walker", "match_waits"]

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
    region: Any  # the indexed region as in `course.grading.kernels`, None if unknown
    line: int | None
    order: int

    @property
    def space(self) -> str:
        """The memory space of the ref accessed."""
        return self.ref.space


@dataclass(frozen=True)
class Dma:
    """One `dma_start`: where it copies from and to, and whether it is waited before use."""

    src: RefInfo
    dst: RefInfo
    sem: RefInfo | None
    dst_region: Any
    line: int | None
    order: int
    waited: bool = False
    wait_line: int | None = None
    read_before_wait: MemoryAccess | None = None

    @property
    def same_dtype(self) -> bool:
        """Whether source and destination have one dtype (a DMA moves bytes, it does not convert)."""
        return self.src.dtype == self.dst.dtype

    def describe(self) -> str:
        """'the DMA at line 12 from `x_hbm_ref` (any, ...) into `buf` (vmem, ...)'."""
        where = f" at line {self.line}" if self.line else ""
        return f"the DMA{where} from {self.src.describe()} into {self.dst.describe()}"


def _space(aval: Any) -> str:
    """The memory space of a ref's type as a lower-case word."""
    space = getattr(aval, "memory_space", None)
    if space is None:
        return "default"
    return str(getattr(space, "value", space)).lower()


@dataclass
class _Event:
    """A DMA start or wait found by the walk, before starts and waits are matched."""

    src: RefInfo
    dst: RefInfo
    sem: RefInfo | None
    dst_region: Any
    line: int | None
    order: int
    kind: str  # "start" or "wait"
    loops: tuple[int, ...]  # the loops (by order of entry) around the event, innermost last


@dataclass
class Walker:
    """State of one walk over a kernel jaxpr and the jaxprs nested in it."""

    path: Path | None
    refs: list[RefInfo] = field(default_factory=list)
    accesses: list[MemoryAccess] = field(default_factory=list)
    starts: list[_Event] = field(default_factory=list)
    waits: list[_Event] = field(default_factory=list)
    counter: Counter[str] = field(default_factory=Counter)
    loops: tuple[int, ...] = ()

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
                outer_loops = self.loops
                if prim in LOOPS:
                    self.counter["loop"] += 1
                    self.loops = (*self.loops, self.counter["loop"])
                self.walk(inner, nested, line)
                self.loops = outer_loops

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
        self.counter["order"] += 1
        kind = "start" if eqn.primitive.name == "dma_start" else "wait"
        event = _Event(src=env[src_var], dst=env[dst_var], sem=env.get(sem_var), dst_region=region,
                       line=line, order=self.counter["order"], kind=kind, loops=self.loops)
        (self.starts if kind == "start" else self.waits).append(event)


def _dtype(aval: Any) -> np.dtype | None:
    """The NumPy dtype a ref holds, or None for a semaphore (whose dtype NumPy does not know)."""
    try:
        return np.dtype(aval.dtype)
    except TypeError:
        return None


def match_waits(starts: list[_Event], waits: list[_Event], accesses: list[MemoryAccess]) -> list[Dma]:
    """Pair starts and waits in program order, find reads of each target before its wait.

    A wait answers the oldest unanswered start on its semaphore. A start left unanswered still
    counts as waited when a loop around it also waits on that semaphore: the next iteration's
    wait is the one that answers it (double buffering).
    """
    pending: list[_Event] = []
    answer: dict[int, _Event] = {}
    for event in sorted(starts + waits, key=lambda e: e.order):
        if event.kind == "start":
            pending.append(event)
            continue
        match = next((s for s in pending if _same_sem(s, event)), None)
        if match is not None:
            pending.remove(match)
            answer[match.order] = event
    dmas = []
    for s in starts:
        wait = answer.get(s.order)
        looped = wait is None and any(_same_sem(s, w) and set(w.loops) & set(s.loops) for w in waits)
        until = wait.order if wait else None
        early = next((a for a in accesses if a.ref.index == s.dst.index and a.kind != "store"
                      and a.order > s.order and (until is None or a.order < until)
                      and _overlap(a.region, s.dst_region)), None)
        dmas.append(Dma(src=s.src, dst=s.dst, sem=s.sem, dst_region=s.dst_region, line=s.line,
                        order=s.order, waited=wait is not None or looped,
                        wait_line=wait.line if wait else None, read_before_wait=early))
    return dmas


def _same_sem(start: _Event, wait: _Event) -> bool:
    """A wait answers a start when both use one semaphore (or, lacking one, one destination)."""
    if start.sem is not None and wait.sem is not None:
        return start.sem.index == wait.sem.index
    return start.dst.index == wait.dst.index


def _overlap(a: Any, b: Any) -> bool:
    """Whether two regions certainly share an element; unknown or differently dynamic ones do not."""
    if a is None or b is None or len(a) != len(b):
        return False
    for (ka, loa, hia), (kb, lob, hib) in zip(a, b, strict=True):
        if loa is None or lob is None or ka != kb or not (loa < hib and lob < hia):
            return False
    return True
