"""What a kernel trace is made of: buffers, concrete windows of them, and the events that touch them.

`course.grading.observe.kernels.kernel_trace` runs a kernel in plain Python and records what it did as `Event`s
in program order. Each read, write and DMA names a `Window`: a concrete box of one `Buffer` (a
kernel argument, a `scratch_shapes` buffer or a `pl.run_scoped` allocation), worked out exactly
from the kernel's integer arithmetic. A window is never clamped: one that reaches outside its
buffer says so (`in_bounds`), which is how a prefetch past the last block is found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax.extend as jex
import numpy as np

from course.grading.observe.traces.scalars import is_known

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


def _resolve(value: Any, env_values: dict[int, Any]) -> int | None:
    """An index as a Python int, or None when the trace does not know it."""
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, jex.core.Literal):
        return int(np.asarray(value.val))
    found = env_values.get(id(value), value)
    if is_known(found) and np.size(found) == 1:
        return int(np.asarray(found).reshape(()))
    return None


def compose_window(buf: Buffer, transforms: Any, env_values: dict[int, Any]) -> Window:
    """Compose a chain of `NDIndexer`s over `buf` into one window in the buffer's coordinates."""
    from jax._src.state.indexing import NDIndexer, Slice  # no public home for these types yet

    rank = len(buf.shape)
    view = [(d, 0, n, 1) for d, n in enumerate(buf.shape)]  # (base dim, start, size, stride)
    fixed: dict[int, int | None] = {}
    for t in transforms or ():
        if not isinstance(t, NDIndexer) or tuple(t.int_indexer_shape):
            return Window(buf, (None,) * rank, tuple(buf.shape), (1,) * rank, (False,) * rank)
        new_view = []
        for (base, start, _size, stride), idx in zip(view, t.indices, strict=False):
            if isinstance(idx, Slice):
                s = _resolve(idx.start, env_values)
                begin = None if s is None or start is None else start + s * stride
                new_view.append((base, begin, int(idx.size), stride * int(idx.stride)))
            else:
                i = _resolve(idx, env_values)
                fixed[base] = None if i is None or start is None else start + i * stride
        view = new_view + view[len(t.indices):]
    starts, sizes, strides, squeezed = [0] * rank, [1] * rank, [1] * rank, [False] * rank
    for base, start, size, stride in view:
        starts[base], sizes[base], strides[base] = start, size, stride
    for base, index in fixed.items():
        starts[base], squeezed[base] = index, True
    return Window(buf, tuple(starts), tuple(sizes), tuple(strides), tuple(squeezed))


def numpy_index(win: Window) -> tuple[Any, ...] | None:
    """A NumPy index for an exact window (squeezed dimensions kept as length 1), else None."""
    if not win.exact:
        return None
    return tuple(slice(s, s + (n - 1) * st + 1, st) if n else slice(s, s)
                 for s, n, st in zip(win.starts, win.sizes, win.strides, strict=True))
