"""Memory spaces in a kernel: where each ref lives, which loads and stores touch it, and its DMAs.

On a TPU a kernel's refs live in HBM (`pl.ANY`, `pltpu.HBM`), VMEM or SMEM, and only VMEM and
SMEM can be loaded or stored; HBM is reached by DMA (`dma_start`, then `dma_wait`). Each ref in
a kernel jaxpr carries its space in its type (`Ref<any>`, `Ref<vmem>`, `Ref<smem>`; `default`
is a blocked operand, which Pallas copies into VMEM). `kernel_memory(call)` walks the kernel of a
`KernelCall` in program order, through `run_scoped`, `pl.when`, loops and inner `jit`s, and
records every ref (kernel arguments and scoped buffers), every access with its space, value shape
and the learner's line, and every DMA with whether and where it is waited. A DMA made inside a
library helper (`pltpu.sync_copy`) has no line of the learner's own, so it takes the line of the
enclosing equation, which is the learner's call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.extend as jex
import numpy as np
from jax import tree_util

from course.grading.kernels import LOADS, STORES, UPDATES, KernelCall, _region, _sub_env, learner_line

__all__ = [
    "HBM_SPACES", "Dma", "KernelMemory", "MemoryAccess", "RefInfo", "dma_copies",
    "explain_strict_failure", "hbm_access_message", "kernel_memory", "memory_accesses", "ref_spaces", "smem_reads",
]

# Spaces a kernel may only reach by DMA: indexing them is refused on a TPU.
HBM_SPACES = frozenset({"any", "hbm"})
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


@dataclass
class KernelMemory:
    """Every ref, access and DMA of one kernel, in program order."""

    call: KernelCall
    refs: list[RefInfo]
    accesses: list[MemoryAccess]
    dmas: list[Dma]

    def args(self) -> list[RefInfo]:
        """The refs the kernel receives as arguments, in order."""
        return [r for r in self.refs if r.arg is not None]

    def ref(self, name: str) -> RefInfo:
        """The ref called `name` (a kernel argument name)."""
        return next(r for r in self.refs if r.name == name)

    def in_space(self, *spaces: str) -> list[MemoryAccess]:
        """The loads and stores of refs in any of the given spaces."""
        return [a for a in self.accesses if a.space in spaces]

    def smem_refs(self) -> list[RefInfo]:
        """The refs that live in SMEM (scalar-prefetch operands, SMEM specs and scratch)."""
        return [r for r in self.refs if r.space == "smem"]

    def smem_reads(self) -> list[MemoryAccess]:
        """Every load from an SMEM ref; a scalar read has shape `()`."""
        return [a for a in self.accesses if a.space == "smem" and a.kind in ("load", "update")]

    def dmas_from(self, ref: RefInfo) -> list[Dma]:
        """The DMAs whose source is `ref`."""
        return [d for d in self.dmas if d.src.index == ref.index]

    def unwaited(self) -> list[Dma]:
        """The DMAs that no `.wait()` answers: their destination never receives the data."""
        return [d for d in self.dmas if not d.waited]

    def early_reads(self) -> list[Dma]:
        """The DMAs whose destination is read after the start and before the wait."""
        return [d for d in self.dmas if d.read_before_wait is not None]

    def converting(self) -> list[Dma]:
        """The DMAs between refs of two dtypes (a DMA copies bytes; it cannot convert)."""
        return [d for d in self.dmas if not d.same_dtype]

    def uncopied_cause(self) -> str | None:
        """Why a destination may hold nothing: a DMA never waited, or read before its wait."""
        for dma in self.unwaited():
            return (f"{dma.describe()} is started but never waited: a DMA's destination is "
                    "undefined until its `.wait()`, and the TPU interpreter copies at the wait.")
        for dma in self.early_reads():
            read = dma.read_before_wait
            at = f"line {read.line}" if read is not None and read.line else "the kernel"
            wait = f" at line {dma.wait_line}" if dma.wait_line else ""
            return (f"{at} reads the destination of {dma.describe()} before its wait{wait}: "
                    "until the wait returns, that memory holds nothing yet.")
        return None


def kernel_memory(call: KernelCall) -> KernelMemory:
    """Walk the kernel of `call` and collect its refs, accesses and DMAs with memory spaces."""
    walker = _Walker(call.path)
    env = {var: walker.new_ref(var, call.arg_names[i], i, None) for i, var in enumerate(call.jaxpr.invars)}
    walker.walk(call.jaxpr, env, None)
    return KernelMemory(call=call, refs=walker.refs, accesses=walker.accesses,
                        dmas=_match_waits(walker.starts, walker.waits, walker.accesses))


def ref_spaces(call: KernelCall) -> dict[str, str]:
    """{kernel argument name: memory space} for every ref the kernel receives."""
    return {r.name: r.space for r in kernel_memory(call).args()}


def memory_accesses(call: KernelCall) -> list[MemoryAccess]:
    """Every load and store in the kernel, of arguments and scoped buffers, with its ref's space."""
    return kernel_memory(call).accesses


def dma_copies(call: KernelCall) -> list[Dma]:
    """Every DMA the kernel starts, with spaces, dtypes, its wait and any read before the wait."""
    return kernel_memory(call).dmas


def smem_reads(call: KernelCall) -> list[MemoryAccess]:
    """Every load from an SMEM ref, with the shape it reads (`()` for one scalar)."""
    return kernel_memory(call).smem_reads()


def explain_strict_failure(exc: BaseException, mem: KernelMemory) -> str | None:
    """A sentence for an error the strict interpreter raised over this kernel, or None.

    Two errors have a known cause: indexing an HBM/ANY ref ("cannot be referenced directly"),
    and a DMA between two dtypes, which fails inside the simulator with a bare AssertionError.
    Both are named by the learner's line.
    """
    text = str(exc)
    direct = mem.in_space(*HBM_SPACES)
    if "cannot be referenced directly" in text and direct:
        return hbm_access_message(direct[0])
    if "CpuCallback error" in text and mem.converting():
        dma = mem.converting()[0]
        return (f"{dma.describe()} failed in the TPU interpreter: a DMA copies bytes and cannot "
                f"convert {dma.src.dtype} to {dma.dst.dtype}. Give the buffer the "
                "source's dtype and convert after loading it, if you need to.")
    return None


def hbm_access_message(access: MemoryAccess) -> str:
    """The rule an index of an HBM/ANY ref breaks, with the learner's line and what to do instead."""
    at = f"line {access.line}" if access.line else "the kernel"
    if access.kind == "store":
        verb, advice = "stores to", ("Write the result into a VMEM buffer, then copy that buffer "
                                     f"into `{access.ref.name}` with `pltpu.sync_copy`.")
    else:
        verb, advice = "loads from", ("Copy it into a VMEM buffer with `pltpu.sync_copy` and "
                                      "index the copy.")
    return (f"{at} {verb} {access.ref.describe()}, which lives in HBM: a TPU kernel cannot index "
            "it, so this is not a slow access but no access at all (only `interpret=True` lets "
            f"it pass). {advice}")


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
class _Walker:
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
                sub_env = _sub_env(eqn, inner, env) if env else {}
                if prim == "run_scoped":
                    for i, var in enumerate(inner.invars):
                        sub_env[var] = self.new_ref(var, f"scoped buffer {i}", None, line)
                outer_loops = self.loops
                if prim in LOOPS:
                    self.counter["loop"] += 1
                    self.loops = (*self.loops, self.counter["loop"])
                self.walk(inner, sub_env, line)
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
            region=_region(transforms, tuple(ref.aval.shape), defs), line=line,
            order=self.counter["order"]))

    def _dma(self, eqn: Any, env: dict[Any, RefInfo], defs: dict[Any, Any], line: int | None) -> None:
        """Record one DMA start or wait whose source and destination are known refs."""
        src, dst, sem, _, _ = eqn.params["tree"].unflatten(eqn.invars)
        src_var, dst_var, sem_var = (getattr(r, "ref", r) for r in (src, dst, sem))
        if any(isinstance(v, jex.core.Literal) or v not in env for v in (src_var, dst_var)):
            return
        region = _region(getattr(dst, "transforms", ()), tuple(dst_var.aval.shape), defs)
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


def _match_waits(starts: list[_Event], waits: list[_Event], accesses: list[MemoryAccess]) -> list[Dma]:
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
