"""Which grid axis drives which block: a `pallas_call`'s grid, blocks, index maps and VMEM budget.

Learners name and order grid axes as they like (`(i, j, k)`, N-major, K first), so a grader
cannot read meaning from positions. `grid_info(call)` evaluates each operand's index map over
the grid instead, exactly and without compiling (`course.grading.observe.kernels.kernel_trace.evaluate_jaxpr`):
it varies one axis at a time, from the origin and from the far corner, and records which of
the operand's dimensions change block. A matmul's K axis is then "the axis that moves x's
dimension 1", wherever the learner put it. The same record gives the tile rules of a TPU
(`tile_problem`) and the VMEM a kernel holds (`vmem_bytes`: every blocked operand twice, since
the pipeline double-buffers it, plus scratch and `pl.run_scoped` buffers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.grading.observe.kernels.kernel_trace import evaluate_jaxpr
from course.grading.observe.kernels.kernels import KernelCall
from course.grading.observe.traces.jaxprs import walk_eqns

__all__ = ["BlockUse", "GridInfo", "VmemItem", "bad_region", "grid_info", "tile_problem", "unwritten_tail",
           "unwritten_tails", "vmem_bytes"]

# Spaces whose operands Pallas does not copy into VMEM block by block.
_UNBLOCKED = frozenset({"any", "hbm", "smem", "semaphore_mem"})


@dataclass(frozen=True)
class BlockUse:
    """One input or output of a `pallas_call`: its array, its block and the grid axes that move it."""

    position: int  # among the call's inputs, then its outputs (scalar-prefetch operands excluded)
    name: str  # the kernel parameter that receives it
    role: str  # "input" or "output"
    array_shape: tuple[int, ...]
    block_shape: tuple[int | None, ...]  # None marks a squeezed dimension (a block of one)
    dtype: np.dtype
    space: str
    moves: tuple[frozenset[int], ...]  # per grid axis, the array dimensions whose block index it changes

    @property
    def blocked(self) -> bool:
        """Whether Pallas copies it into VMEM block by block."""
        return self.space not in _UNBLOCKED

    @property
    def block_dims(self) -> tuple[int, ...]:
        """The block's shape with squeezed dimensions as 1."""
        return tuple(1 if b is None else b for b in self.block_shape)

    @property
    def block_bytes(self) -> int:
        """Bytes of one block."""
        return math.prod(self.block_dims) * self.dtype.itemsize

    def axes_moving(self, dim: int) -> frozenset[int]:
        """The grid axes that move this operand along array dimension `dim`."""
        return frozenset(a for a, dims in enumerate(self.moves) if dim in dims)

    def moved(self) -> frozenset[int]:
        """Every grid axis that moves this operand at all."""
        return frozenset(a for a, dims in enumerate(self.moves) if dims)

    def whole(self, dim: int) -> bool:
        """Whether the block spans all of array dimension `dim`."""
        return self.block_dims[dim] >= self.array_shape[dim]

    def shape_text(self) -> str:
        """The block shape as the learner wrote it: `(128, 512)`."""
        return "(" + ", ".join("None" if b is None else str(b) for b in self.block_shape) + ")"


@dataclass(frozen=True)
class GridInfo:
    """A call's grid, its blocked operands and the `dimension_semantics` it gave (or None)."""

    grid: tuple[int, ...]
    blocks: tuple[BlockUse, ...]
    semantics: tuple[str, ...] | None

    def block(self, name: str) -> BlockUse:
        """The operand received by the kernel parameter `name`."""
        return next(b for b in self.blocks if b.name == name)

    def inputs(self) -> list[BlockUse]:
        """The call's inputs, in order."""
        return [b for b in self.blocks if b.role == "input"]

    def outputs(self) -> list[BlockUse]:
        """The call's outputs, in order."""
        return [b for b in self.blocks if b.role == "output"]

    def semantic(self, axis: int) -> str | None:
        """The semantics given for grid axis `axis` ('parallel', 'arbitrary', ...), or None."""
        if self.semantics is None or axis >= len(self.semantics):
            return None
        return self.semantics[axis]


def _semantics(params: dict[str, Any]) -> tuple[str, ...] | None:
    """`dimension_semantics` from a call's compiler params (an object or a dict), as lower-case words."""
    cp = params.get("compiler_params")
    if cp is None:
        return None
    if isinstance(cp, dict):
        cp = cp.get("mosaic_tpu", cp.get("mosaic", cp))
        sem = cp.get("dimension_semantics") if isinstance(cp, dict) else getattr(cp, "dimension_semantics", None)
    else:
        sem = getattr(cp, "dimension_semantics", None)
    if sem is None:
        return None
    return tuple(str(getattr(s, "value", s)).lower().split(".")[-1] for s in sem)


def _block_shape(mapping: Any) -> tuple[int | None, ...]:
    """Block sizes per dimension, None for a squeezed one."""
    out = []
    for b in mapping.block_shape:
        size = getattr(b, "block_size", b)
        out.append(None if size is None or type(b).__name__ == "Squeezed" else int(size))
    return tuple(out)


def _moves(mapping: Any, grid: tuple[int, ...], prefetch: tuple[Any, ...]) -> tuple[frozenset[int], ...]:
    """For each grid axis, the array dimensions whose block index changes along it."""
    closed = mapping.index_map_jaxpr
    n_refs = len(closed.jaxpr.invars) - len(grid)
    tables = list(prefetch[:n_refs]) + [np.zeros(v.aval.shape, np.dtype(v.aval.dtype))
                                         for v in closed.jaxpr.invars[len(grid) + len(prefetch[:n_refs]):]]

    def blocks(point: tuple[int, ...]) -> tuple[Any, ...]:
        """The block indices the index map gives at one grid point."""
        return tuple(np.asarray(v).item() if isinstance(v, np.ndarray) else None
                     for v in evaluate_jaxpr(closed, *point, *tables))

    moved = []
    for axis, size in enumerate(grid):
        dims: set[int] = set()
        for base in (tuple(0 for _ in grid), tuple(g - 1 for g in grid)):
            origin = blocks(base)
            for t in range(size):
                point = base[:axis] + (t,) + base[axis + 1:]
                dims.update(d for d, (a, b) in enumerate(zip(origin, blocks(point), strict=True)) if a != b)
        moved.append(frozenset(dims))
    return tuple(moved)


def grid_info(call: KernelCall, *, prefetch: tuple[Any, ...] = ()) -> GridInfo:
    """Evaluate every index map of `call` over its grid; `prefetch` gives scalar-prefetch values if any."""
    gm = call.params["grid_mapping"]
    grid = tuple(int(g) for g in gm.grid)
    blocks = []
    for pos, mapping in enumerate(gm.block_mappings):
        arg = call.num_index + pos
        aval = call.jaxpr.invars[arg].aval
        space = str(getattr(getattr(aval, "memory_space", None), "value", None) or "default").lower()
        blocks.append(BlockUse(
            position=pos, name=call.arg_names[arg], role="input" if pos < call.num_inputs else "output",
            array_shape=tuple(mapping.array_aval.shape), block_shape=_block_shape(mapping),
            dtype=np.dtype(mapping.array_aval.dtype), space=space,
            moves=_moves(mapping, grid, tuple(prefetch)) if grid else ()))
    return GridInfo(grid=grid, blocks=tuple(blocks), semantics=_semantics(call.params))


def tile_problem(block: BlockUse) -> str | None:
    """Why a block is not a TPU tile, or None: it must divide the array, and its last two dims be
    multiples of (8, 128) for 32-bit data, (16, 128) for 16-bit (or span the whole dimension)."""
    dims, shape = block.block_dims, block.array_shape
    for d, (b, n) in enumerate(zip(dims, shape, strict=True)):
        if n % b:
            return f"its dimension {d} ({b}) does not divide the array's ({n})"
    sublanes = 8 * max(1, 4 // block.dtype.itemsize)
    rules = [(len(dims) - 2, sublanes), (len(dims) - 1, 128)]
    for d, multiple in rules:
        if d < 0 or block.block_shape[d] is None:
            continue
        if dims[d] % multiple and dims[d] != shape[d]:
            return (f"its last two dims must be multiples of ({sublanes}, 128) for "
                    f"{block.dtype.name}, or the whole dimension")
    return None


@dataclass(frozen=True)
class VmemItem:
    """One piece of a kernel's VMEM: a double-buffered block, a scratch buffer or a scoped one."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    copies: int  # 2 for a pipelined block, 1 otherwise

    @property
    def nbytes(self) -> int:
        """Bytes it takes, all copies counted."""
        return self.copies * math.prod(self.shape) * self.dtype.itemsize

    def text(self) -> str:
        """'x_ref [1024, 512] float32 x2 = 4.0 MiB'."""
        times = f" x{self.copies}" if self.copies > 1 else ""
        return f"{self.name} {list(self.shape)} {self.dtype.name}{times} = {self.nbytes / 2**20:.1f} MiB"


def vmem_bytes(call: KernelCall, info: GridInfo | None = None) -> tuple[int, list[VmemItem]]:
    """The VMEM a kernel holds at once: 2 x each blocked operand + VMEM scratch + run_scoped VMEM."""
    info = info or grid_info(call)
    items = [VmemItem(b.name, b.block_dims, b.dtype, 2) for b in info.blocks if b.blocked]
    first_scratch = call.num_index + call.num_inputs + call.num_outputs
    for i, var in enumerate(call.jaxpr.invars[first_scratch:]):
        _add_vmem(items, call.arg_names[first_scratch + i], var.aval)
    for eqn, _ in walk_eqns(call.jaxpr):
        if eqn.primitive.name == "run_scoped":
            for var in eqn.params["jaxpr"].invars:
                _add_vmem(items, "run_scoped buffer", var.aval)
    return sum(i.nbytes for i in items), items


def _add_vmem(items: list[VmemItem], name: str, aval: Any) -> None:
    """Append a scratch or scoped buffer when it lives in VMEM."""
    space = str(getattr(getattr(aval, "memory_space", None), "value", "")).lower()
    try:
        dtype = np.dtype(aval.dtype)
    except TypeError:
        return  # semaphores take no VMEM
    if space == "vmem":
        items.append(VmemItem(name, tuple(aval.shape), dtype, 1))


def unwritten_tail(bad: np.ndarray, axis: int) -> tuple[int, list[int]] | None:
    """From a result's values alone: where its last lines along `axis` begin when they, and nothing before
    them, are bad in full (NaN: never written), with each tile of 128 x k that does not divide the size but
    whose floor-divided grid stops exactly there; None when the bad part is not such a tail."""
    lines = np.moveaxis(bad, axis, 0).reshape(bad.shape[axis], -1).all(axis=1)
    if not lines.any():
        return None
    edge, size = int(np.argmax(lines)), bad.shape[axis]
    if not lines[edge:].all() or np.take(bad, range(edge), axis=axis).any():
        return None
    tiles = _floor_tiles(size, edge)
    return (edge, tiles) if tiles else None


def _floor_tiles(size: int, edge: int) -> list[int]:
    """The tiles of 128 x k that do not divide `size` but whose floor-divided grid stops exactly at `edge`."""
    return [t for t in range(128, size + 1, 128) if size % t and size // t * t == edge]


def unwritten_tails(bad: np.ndarray) -> dict[int, tuple[int, list[int]]] | None:
    """From a 2-D result's values alone: when the bad part is exactly its last rows, its last columns, or both (as
    grids of M // tile and N // tile leave them unwritten), where each tail begins and the tiles that stop
    there (`unwritten_tail`, per axis); None when the bad part is anything else."""
    edges = []
    for axis in (0, 1):
        full = bad.all(axis=1 - axis)
        edge = len(full) - int(np.argmin(full[::-1])) if not full.all() else 0
        edges.append(edge)
    expected = np.zeros_like(bad)
    expected[edges[0]:, :] = True
    expected[:, edges[1]:] = True
    if not bad.any() or (expected != bad).any():
        return None
    tails = {axis: (edge, _floor_tiles(bad.shape[axis], edge)) for axis, edge in enumerate(edges)
             if edge < bad.shape[axis]}
    return tails if tails and all(tiles for _, tiles in tails.values()) else None


def _runs(index: np.ndarray) -> str:
    """'512 to 639' or '3' or '0 to 3 and 8 to 9': consecutive indices as ranges."""
    cuts = np.flatnonzero(np.diff(index) != 1) + 1
    parts = [f"{r[0]} to {r[-1]}" if len(r) > 1 else f"{r[0]}" for r in np.split(index, cuts)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def bad_region(bad: np.ndarray) -> str:
    """Where a 2-D mask is set, as the region it is rather than its bounding box: 'every element', 'all of rows
    512 to 639 and all of columns 256 to 383', and what lies outside whole lines as a count within its box."""
    if bad.all():
        return "every element"
    rows, cols = np.flatnonzero(bad.all(axis=1)), np.flatnonzero(bad.all(axis=0))
    parts = [f"all of {word if index.size > 1 else word[:-1]} {_runs(index)}"
             for word, index in (("rows", rows), ("columns", cols)) if index.size]
    rest = bad.copy()
    rest[rows, :] = False
    rest[:, cols] = False
    if rest.any():
        r, c = np.flatnonzero(rest.any(axis=1)), np.flatnonzero(rest.any(axis=0))
        parts.append(f"{int(rest.sum())} element(s) within rows {r[0]} to {r[-1]}, columns {c[0]} to {c[-1]}")
    return " and ".join(parts)
