"""What a kernel trace is made of: buffers, concrete windows of them, and the events that touch them.

`course.grading.kernel_trace` runs a kernel in plain Python and records what it did as `Event`s
in program order. Each read, write and DMA names a `Window`: a concrete box of one `Buffer` (a
kernel argument, a `scratch_shapes` buffer or a `pl.run_scoped` allocation), worked out exactly
from the kernel's integer arithmetic. A window is never clamped: one that reaches outside its
buffer says so (`in_bounds`), which is how a prefetch past the last block is found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Buffer", "Event", "TraceUnsupported", "Window"]

SPACE_WORDS = {"any": "ANY", "hbm": "HBM", "vmem": "VMEM", "smem": "SMEM", "default": "VMEM block",
               "semaphore_mem": "semaphore"}


class TraceUnsupported(Exception):
    """The kernel does something the shadow interpreter cannot follow; the message says what and where."""


@dataclass(frozen=True, eq=False)
class Buffer:
    """Memory a kernel can name: an argument, a scratch buffer, or a `pl.run_scoped` allocation."""

    index: int
    name: str
    space: str  # "any", "hbm", "vmem", "smem", "semaphore_mem" or "default" (a blocked operand)
    dtype: np.dtype | None  # None for semaphores
    shape: tuple[int, ...]
    arg: int | None  # kernel argument position, None for a run_scoped allocation
    line: int | None  # the learner's line that made a run_scoped allocation
    site: str  # where it comes from: the same for every entry of one run_scoped
    content: np.ndarray | None = field(default=None, repr=False)  # integers the trace knows
    known: np.ndarray | None = field(default=None, repr=False)  # which of them it knows

    @property
    def nbytes(self) -> int:
        """Its size in bytes (0 for semaphores)."""
        return 0 if self.dtype is None else math.prod(self.shape) * self.dtype.itemsize

    @property
    def is_semaphore(self) -> bool:
        """Whether it holds semaphores."""
        return self.dtype is None

    def describe(self) -> str:
        """'`x_hbm_ref` (ANY, float32[40, 128])' or 'a VMEM float32[2, 8, 128] buffer made at line 9'."""
        if self.dtype is None:
            kind = f"semaphores{list(self.shape)}" if self.shape else "semaphore"
        else:
            kind = f"{self.dtype.name}{list(self.shape)}"
        space = SPACE_WORDS.get(self.space, self.space)
        if self.arg is not None:
            return f"`{self.name}` ({space}, {kind})"
        return f"a {space} {kind} buffer made" + (f" at line {self.line}" if self.line else "")


@dataclass(frozen=True)
class Window:
    """A box of a buffer: per buffer dimension a start (None when unknown), a size and a stride.

    A dimension indexed by a scalar has size 1 and is `squeezed`: it is not part of the shape of
    what is moved.
    """

    buffer: Buffer
    starts: tuple[int | None, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    squeezed: tuple[bool, ...]

    @property
    def exact(self) -> bool:
        """Whether every start is known."""
        return all(s is not None for s in self.starts)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of what the window holds, squeezed dimensions left out."""
        return tuple(n for n, sq in zip(self.sizes, self.squeezed, strict=True) if not sq)

    @property
    def nbytes(self) -> int:
        """Bytes in the window (0 for semaphores)."""
        dtype = self.buffer.dtype
        return 0 if dtype is None else math.prod(self.sizes) * dtype.itemsize

    @property
    def in_bounds(self) -> bool:
        """Whether the window lies inside its buffer (an unknown start counts as inside)."""
        for start, size, stride, dim in zip(self.starts, self.sizes, self.strides, self.buffer.shape, strict=True):
            if start is not None and size and (start < 0 or start + (size - 1) * stride >= dim):
                return False
        return True

    def ranges(self) -> tuple[tuple[int, int], ...] | None:
        """Per dimension the half-open range [lo, hi) it spans, or None when a start is unknown."""
        if not self.exact:
            return None
        return tuple((s, s + (n - 1) * st + 1 if n else s)
                     for s, n, st in zip(self.starts, self.sizes, self.strides, strict=True))

    def overlaps(self, other: Window) -> bool:
        """Whether both windows certainly share an element (unknown starts never do)."""
        if other.buffer is not self.buffer:
            return False
        mine, theirs = self.ranges(), other.ranges()
        if mine is None or theirs is None:
            return False
        return all(a < d and c < b for (a, b), (c, d) in zip(mine, theirs, strict=True))

    def covers(self, other: Window) -> bool:
        """Whether this window holds every element of `other`."""
        mine, theirs = self.ranges(), other.ranges()
        if other.buffer is not self.buffer or mine is None or theirs is None:
            return False
        return all(a <= c and d <= b for (a, b), (c, d) in zip(mine, theirs, strict=True))

    def text(self) -> str:
        """The window as indexing: `x_hbm_ref[8:16, 0:128]`, `bufs[1, 0:8, 0:128]`, `sem[0]`."""
        parts = []
        for start, size, stride, sq in zip(self.starts, self.sizes, self.strides, self.squeezed, strict=True):
            if start is None:
                parts.append("?")
            elif sq:
                parts.append(str(start))
            else:
                step = f":{stride}" if stride != 1 else ""
                parts.append(f"{start}:{start + (size - 1) * stride + 1}{step}")
        name = self.buffer.name if self.buffer.arg is not None else "scoped"
        return f"{name}[{', '.join(parts)}]" if parts else name


@dataclass(frozen=True)
class Event:
    """One thing the kernel did, in program order.

    `kind` is "read", "write", "update" (a read-modify-write), "dma_start", "dma_wait",
    "signal" or "wait" (plain semaphores), or "op" (any other executed primitive: `prim`, with
    the `shape` and `dtype` of its first result). `step` is the grid point and `iters` the
    iteration numbers of the loops around the event, outermost first.
    """

    kind: str
    order: int
    step: tuple[int, ...]
    iters: tuple[int, ...]
    line: int | None
    prim: str
    window: Window | None = None
    src: Window | None = None
    dst: Window | None = None
    sem: Window | None = None
    shape: tuple[int, ...] = ()
    dtype: Any = None
    eqn: Any = field(default=None, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        """Bytes a DMA moves (a wait's count comes from its descriptor's source, as on a TPU)."""
        return self.src.nbytes if self.src is not None else 0
