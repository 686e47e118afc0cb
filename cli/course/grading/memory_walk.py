"""The walk behind `course.grading.memory`: refs, accesses and DMAs of a kernel jaxpr, in program order.

Every ref variable is mapped to the `RefInfo` of the kernel argument or scoped buffer it stands
for, through `run_scoped`, `cond`, loops and inner `jit`s (the mapping of `course.grading.kernels`).
DMA starts and waits are then paired the way a DMA semaphore counts: each copy adds the bytes it
moves, each `.wait()` takes away the bytes of its own descriptor, oldest start first, and a start
or wait inside a loop of known length counts once per turn. A wait inside a loop that finds
nothing left to take answers the starts made later in that loop, for its next turn (double
buffering), and a start under `pl.when` need not run every turn.
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

from course.grading.jaxprs import learner_line, region_of, sub_env
from course.grading.kernels import LOADS, STORES, UPDATES

__all__ = ["Dma", "MemoryAccess", "RefInfo", "SPACE_WORDS", "StuckWait", "Walker", "match_waits", "stuck_waits"]

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

    nbytes: int | None = None  # bytes one copy moves; None when the shapes are not static
    src_region: Any = None  # the part of the source it reads, as `dst_region`
    times: int = 1  # how many times the start runs: the lengths of the loops around it
    missing: int = 0  # bytes started that no wait takes: the copies that never land
    followed: bool = False  # some wait on its semaphore comes after it (or in a loop around both)

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
    loops: tuple[tuple[int, int | None], ...]  # (loop id, trip count or None) around the event
    src_region: Any = None
    nbytes: int | None = None  # the bytes of the descriptor: what a start adds, what a wait takes
    optional: bool = False  # inside a `cond` (`pl.when`): it may not run every time

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
    starts: list[_Event] = field(default_factory=list)
    waits: list[_Event] = field(default_factory=list)
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
        event = _Event(src=env[src_var], dst=env[dst_var], sem=env.get(sem_var), dst_region=region,
                       line=line, order=self.counter["order"], kind=kind, loops=self.loops,
                       nbytes=_nbytes(src_var, getattr(src, "transforms", ())), optional=self.optional,
                       src_region=src_region)
        (self.starts if kind == "start" else self.waits).append(event)


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


def match_waits(starts: list[_Event], waits: list[_Event], accesses: list[MemoryAccess]) -> list[Dma]:
    """Count each semaphore's bytes in program order; find reads of each destination before its wait.

    A wait takes the bytes of its own descriptor from the oldest starts on its semaphore, so one
    wait for one strip leaves the other strips' copies unwaited. What a wait inside a loop finds
    no start for answers the starts later in that loop (the next turn's copy: double buffering).
    """
    left, answer, _ = _count(starts, waits)
    return [_dma_of(s, answer.get(s.order), left[s.order], accesses, _may_answer(s, waits)) for s in starts]


@dataclass(frozen=True)
class StuckWait:
    """A `.wait()` for more bytes than any copy started on its semaphore: on a TPU it never returns."""

    line: int | None
    nbytes: int  # the bytes it waits for that no start provides
    sem: RefInfo | None


def stuck_waits(starts: list[_Event], waits: list[_Event]) -> list[StuckWait]:
    """The waits left waiting for bytes no start provides, where every count on the semaphore is known.

    A semaphore with a start or wait under `pl.when`, or inside a loop of unknown length, is left
    alone: how often those run depends on values the walk does not know.
    """
    _, _, unused = _count(starts, waits)
    events = starts + waits
    def known(w: _Event) -> bool:
        return not any(_same_sem(e, w) and (e.optional or any(n is None for _, n in e.loops)) for e in events)
    return [StuckWait(w.line, unused[w.order], w.sem) for w in waits if unused.get(w.order) and known(w)]


def _count(starts: list[_Event], waits: list[_Event]) -> tuple[dict[int, int], dict[int, _Event], dict[int, int]]:
    """Run the semaphores' byte counts: bytes each start has left, the wait that answered it, bytes each wait lacks."""
    # A start under `pl.when` may run on one turn only; count it once, so a wait need not cover more.
    left = {s.order: _units(s) * (1 if s.optional else s.times) for s in starts}
    answer: dict[int, _Event] = {}
    unused: dict[int, int] = {}
    for event in sorted(starts + waits, key=lambda e: e.order):
        if event.kind == "start":
            for wait in waits:  # a wait earlier in a loop around this start answers its next turn
                if (unused.get(wait.order) and wait.order < event.order and _same_sem(event, wait)
                        and wait.loop_ids() & event.loop_ids() and left[event.order]):
                    took = min(unused[wait.order], left[event.order])
                    left[event.order] -= took
                    unused[wait.order] -= took
                    answer.setdefault(event.order, wait)
            continue
        budget = _units(event) * event.times
        for s in starts:
            if s.order < event.order and _same_sem(s, event) and left[s.order] and budget:
                took = min(budget, left[s.order])
                left[s.order] -= took
                budget -= took
                answer[s.order] = event
        unused[event.order] = budget
    return left, answer, unused


def _may_answer(start: _Event, waits: list[_Event]) -> bool:
    """Whether some wait on the start's semaphore comes after it or shares a loop with it."""
    return any(_same_sem(start, w) and (w.order > start.order or w.loop_ids() & start.loop_ids())
               for w in waits)


def _units(event: _Event) -> int:
    """What one run of a start adds, or of a wait takes: its bytes, or 1 when they are unknown."""
    return event.nbytes if event.nbytes else 1


def _dma_of(s: _Event, wait: _Event | None, missing: int, accesses: list[MemoryAccess], answerable: bool) -> Dma:
    """The Dma of one start, given the wait that answered it and the bytes no wait took.

    A start under `pl.when` gets the benefit of the doubt when a wait could answer it: whether it
    runs on the turn that wait covers depends on values the walk does not know.
    """
    waited = missing == 0 or (s.optional and answerable)
    until = wait.order if wait is not None and wait.order > s.order else None
    early = next((a for a in accesses if a.ref.index == s.dst.index and a.kind != "store"
                  and a.order > s.order and (until is None or a.order < until)
                  and _overlap(a.region, s.dst_region)), None)
    return Dma(src=s.src, dst=s.dst, sem=s.sem, dst_region=s.dst_region, line=s.line, order=s.order,
               waited=waited, wait_line=wait.line if wait is not None else None, read_before_wait=early,
               nbytes=s.nbytes, src_region=s.src_region, times=s.times, missing=0 if waited else missing,
               followed=answerable)


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
