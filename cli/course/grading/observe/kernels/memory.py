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

from dataclasses import dataclass, field

from course.grading.observe.calls.silent_waits import silent_wait_message
from course.grading.observe.kernels.kernels import KernelCall
from course.grading.observe.kernels.memory_walk import MemoryAccess, RefInfo, Walker
from course.grading.observe.kernels.semaphores import Dma, StuckWait, match_waits, one_semaphore, stuck_waits

__all__ = [
    "HBM_SPACES", "Dma", "KernelMemory", "MemoryAccess", "RefInfo", "StuckWait", "dma_copies",
    "explain_strict_failure", "hbm_access_message", "kernel_memory", "memory_accesses", "ref_spaces", "smem_reads",
]

# Spaces a kernel may only reach by DMA: indexing them is refused on a TPU.
HBM_SPACES = frozenset({"any", "hbm"})


@dataclass
class KernelMemory:
    """Every ref, access and DMA of one kernel, in program order."""

    call: KernelCall
    refs: list[RefInfo]
    accesses: list[MemoryAccess]
    dmas: list[Dma]
    stuck: list[StuckWait] = field(default_factory=list)
    """Waits for bytes no copy started: on a TPU they never return, and the TPU interpreter waits forever."""

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
            return self._unwaited_message(dma)
        for dma in self.early_reads():
            read = dma.read_before_wait
            at = f"line {read.line}" if read is not None and read.line else "the kernel"
            wait = f" at line {dma.wait_line}" if dma.wait_line else ""
            return (f"{at} reads the destination of {dma.describe()} before its wait{wait}: "
                    "until the wait returns, that memory holds nothing yet. Read it after the wait.")
        return None

    def stuck_message(self) -> str | None:
        """Why the kernel would hang: a wait for bytes that no copy on its semaphore started, or None."""
        for wait in self.stuck:
            at = f"line {wait.line}" if wait.line else "a `.wait()` in the kernel"
            on = f" on {wait.sem_text()}" if wait.sem_text() else ""
            return (f"{at} waits{on} for {wait.nbytes} bytes that no copy started on its semaphore provides "
                    "(the copies started before it are already waited for): on a TPU the kernel "
                    "hangs there, and the TPU interpreter waits forever. Wait once for each copy "
                    "you start, for that copy's bytes.")
        return None

    def _unwaited_message(self, dma: Dma) -> str:
        """Why `dma` never lands: no wait at all, or waits for fewer bytes than its semaphore was given."""
        peers = [d for d in self.dmas if one_semaphore(d, dma) and d.followed]
        waits = sorted({d.wait_line for d in peers if d.wait_line})
        started = sum((d.nbytes or 0) * d.times for d in peers)
        missing = sum(d.missing for d in peers)
        copies = sum(d.times for d in peers)
        if not dma.followed or not started or missing >= started or copies < 2:
            return (f"{dma.describe()} is started but never waited: a DMA's destination is "
                    "undefined until its `.wait()`, and the TPU interpreter copies at the wait. "
                    "Wait for it (`copy.wait()`, or `pltpu.sync_copy`, which starts and waits) "
                    "before the kernel uses what it copies or ends.")
        lines = sorted({d.line for d in peers if d.line})
        at = f"line {lines[0]}" if len(lines) == 1 else ("lines " + ", ".join(map(str, lines)) if lines
                                                          else "the kernel")
        waited_at = (f"the wait on it at line {waits[0]} waits" if len(waits) == 1 else
                     f"the waits on it at lines {', '.join(map(str, waits))} wait" if waits else "its waits wait")
        count = missing // dma.nbytes if dma.nbytes and missing % dma.nbytes == 0 else 0
        lost = {0: "some of them never land", 1: "one of them never lands"}.get(count, f"{count} of them never land")
        return (f"{at} starts {copies} DMAs on one semaphore ({started} bytes in all), but "
                f"{waited_at} for only {started - missing} bytes: a `.wait()` waits for "
                f"the bytes of its own copy, so {lost}, and what they should fill stays "
                "undefined (NaN under the TPU interpreter). Wait on every copy you start, or once "
                "with a descriptor that covers them all.")


def kernel_memory(call: KernelCall) -> KernelMemory:
    """Walk the kernel of `call` and collect its refs, accesses and DMAs with memory spaces."""
    walker = Walker(call.path)
    if call.grid:  # the body runs once per grid step: a loop whose turns can answer each other's copies
        walker.loops = ((0, call.grid_steps),)
    env = {var: walker.new_ref(var, call.arg_names[i], i, None) for i, var in enumerate(call.jaxpr.invars)}
    walker.walk(call.jaxpr, env, None)
    return KernelMemory(call=call, refs=walker.refs, accesses=walker.accesses,
                        dmas=match_waits(walker.starts, walker.waits, walker.accesses),
                        stuck=stuck_waits(walker.starts, walker.waits))


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

    A wait that nothing will signal is named by `course.grading.observe.calls.silent_waits`. Two errors have a
    known cause: indexing an HBM/ANY ref ("cannot be referenced directly"),
    and a DMA between two dtypes, which fails inside the simulator with a bare AssertionError.
    Both are named by the learner's line.
    """
    text = str(exc)
    silent = silent_wait_message(exc)
    if silent:
        return silent[:1].upper() + silent[1:]
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
    return (f"{at} {verb} {access.ref.describe()}, which lives in HBM. The vector unit has no "
            "path to HBM, so a TPU compiler rejects this outright; only `interpret=True` lets it "
            f"pass. {advice}")
