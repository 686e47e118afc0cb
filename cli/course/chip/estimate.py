"""How long a kernel would take on a TPU, from its grid, blocks, index maps and jaxpr alone: no chip needed.

What a `pallas_call` moves and computes is in its trace:
- **HBM traffic.** Pallas copies an input block in when its block index differs from the step
  before, and writes an output block back when the next step's differs (and after the last). So
  every index map is evaluated at every grid point, in the order the chip runs them (last axis
  fastest), and each change is one block moved: a block fetched again after it was left counts
  again. Operands the kernel copies itself (`memory_space=pl.ANY` with `make_async_copy`) count
  what its DMAs move: each DMA start's window, times the trip count of the loops around it (a
  prefetch under `pl.when` counted as if it always ran: one block too many).
- **MXU work**: every `dot_general` in the kernel, 2 FLOPs per multiply-add, once per step
  (times the trip count of a `fori_loop` around it).
- **Vector work**: the vector registers every other array operation of the kernel fills per step
  (a (512, 1) column fills as many as a (512, 128) block).
- **Steps**: the grid's size, each with a fixed cost.
A step waits for its blocks or for its compute, whichever is longer, so the estimate is
`steps x step cost + max(HBM bytes / bandwidth, MXU FLOPs / MXU rate + vector work / vector rate)`
with the rates of `course.chip.roofline`. Work under `pl.when` (zeroing an accumulator, the last
write) runs on few steps and is left out of the compute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.chip.roofline import STEP_S, VECTOR_OP_S, VREG_OPS_PER_S, Chip

__all__ = ["Estimate", "KernelCost", "kernel_cost"]

# Array operations that only rearrange or name data cost the vector unit nothing worth counting.
_FREE = frozenset({"get", "swap", "masked_load", "masked_swap", "program_id", "num_programs", "broadcast_in_dim",
                   "reshape", "squeeze", "expand_dims", "iota", "dma_start", "dma_wait", "semaphore_signal",
                   "semaphore_wait", "multiple_of", "pjit", "jit", "cond", "scan", "while", "run_scoped",
                   "dot_general"})
_REDUCTIONS = frozenset({"reduce_max", "reduce_min", "reduce_sum", "argmax", "argmin", "reduce_and", "reduce_or"})


@dataclass(frozen=True)
class KernelCost:
    """What one `pallas_call` moves and computes over its whole grid."""

    kernel: str
    grid: tuple[int, ...]
    hbm_bytes: float
    flops: float
    vector_regs: float
    """Vector registers the kernel's elementwise operations fill, over the grid."""
    vector_ops: float
    """Elementwise operations it runs, over the grid."""
    loop_steps: int = 0
    """Iterations of loops that start DMAs by hand: each costs a step's bookkeeping too."""

    @property
    def steps(self) -> int:
        """Grid steps, at least one."""
        return math.prod(self.grid) if self.grid else 1

    def on(self, chip: Chip) -> Estimate:
        """The estimate of this kernel's time on `chip`."""
        hbm, mxu = self.hbm_bytes / chip.bytes_per_s, self.flops / chip.flops_per_s
        vector = self.vector_regs / VREG_OPS_PER_S + self.vector_ops * VECTOR_OP_S
        steps = (self.steps + self.loop_steps) * STEP_S
        return Estimate(self, chip.name, hbm, mxu, vector, steps, steps + max(hbm, mxu, vector))

    def to_json(self) -> dict[str, Any]:
        """The counts as plain data."""
        return {"kernel": self.kernel, "grid": list(self.grid), "steps": self.steps, "hbm_bytes": self.hbm_bytes,
                "flops": self.flops, "vector_regs": self.vector_regs, "vector_ops": self.vector_ops,
                "loop_steps": self.loop_steps}


@dataclass(frozen=True)
class Estimate:
    """A kernel's estimated time on a chip, and its parts."""

    cost: KernelCost
    chip: str
    hbm_s: float
    mxu_s: float
    vector_s: float
    steps_s: float
    seconds: float

    @property
    def bound(self) -> str:
        """What the time goes to: "HBM", "MXU", "vector unit" or "grid steps"."""
        parts = {"HBM": self.hbm_s, "MXU": self.mxu_s, "vector unit": self.vector_s, "grid steps": self.steps_s}
        return max(parts, key=lambda k: parts[k])

    def to_json(self) -> dict[str, Any]:
        """The estimate as plain data."""
        return {"chip": self.chip, "seconds": self.seconds, "hbm_s": self.hbm_s, "mxu_s": self.mxu_s,
                "vector_s": self.vector_s, "steps_s": self.steps_s, "bound": self.bound, **self.cost.to_json()}


def kernel_cost(call: Any) -> KernelCost:
    """The cost of a `KernelCall` (course.grading.observe.kernels.kernels) over its whole grid."""
    gm = call.params["grid_mapping"]
    grid = tuple(int(g) for g in gm.grid)
    hbm = 0.0
    for pos, mapping in enumerate(gm.block_mappings):
        aval = call.jaxpr.invars[call.num_index + pos].aval
        space = str(getattr(getattr(aval, "memory_space", None), "value", None) or "").lower()
        if space in ("any", "hbm", "smem", "semaphore_mem"):
            continue  # not copied by the pipeline: its own DMAs count below
        block = math.prod(_block_dims(mapping)) * np.dtype(mapping.array_aval.dtype).itemsize
        hbm += _moves(mapping.index_map_jaxpr, grid) * block
    dma_bytes, loop_steps = _dma_traffic(call)
    flops, regs, ops = _work(call.jaxpr, 1.0)
    steps = math.prod(grid) if grid else 1
    return KernelCost(call.kernel_name, grid, hbm + dma_bytes, flops * steps, regs * steps, ops * steps, loop_steps)


def _block_dims(mapping: Any) -> tuple[int, ...]:
    """A block's shape, a squeezed dimension as 1."""
    return tuple(1 if getattr(b, "block_size", b) is None else int(getattr(b, "block_size", b))
                 for b in mapping.block_shape)


def _moves(closed: Any, grid: tuple[int, ...]) -> int:
    """How many times a block is moved: 1 + the steps, in grid order, whose block index differs from the step before."""
    import jax
    import jax.extend as jex

    if not grid:
        return 1
    points = np.indices(grid).reshape(len(grid), -1).astype(np.int32)  # row-major: the last axis fastest
    extra = [np.zeros((points.shape[1], *v.aval.shape), v.aval.dtype) for v in closed.jaxpr.invars[len(grid):]]
    with jax.default_device(jax.devices("cpu")[0]):
        blocks = jax.vmap(jex.core.jaxpr_as_fun(closed))(*points, *extra)
    index = np.stack([np.asarray(b).reshape(points.shape[1]) for b in blocks], axis=1)
    return 1 + int(np.any(index[1:] != index[:-1], axis=1).sum())


def _dma_traffic(call: Any) -> tuple[float, int]:
    """Bytes the kernel's own DMAs move between HBM and its memories over the grid, and the loop iterations that
    start them (each pays a step's bookkeeping, however many copies it starts; copies started outside any loop
    count as one more)."""
    moved, iterations, outside = _dmas(call.jaxpr)
    steps = math.prod(int(g) for g in call.params["grid_mapping"].grid) if call.params["grid_mapping"].grid else 1
    return moved * steps, int((iterations + outside) * steps)


def _dmas(jaxpr: Any) -> tuple[float, float, bool]:
    """(HBM bytes, DMA-starting loop iterations, whether it starts DMAs outside any loop) of one run of `jaxpr`: a
    loop's by its trip count, a `pl.when` as if it ran (a prefetch guarded by one runs on all steps but the last)."""
    import jax
    import jax.extend as jex

    moved = iterations = 0.0
    outside = False
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        if eqn.primitive.name == "dma_start":
            src, dst = jax.tree_util.tree_unflatten(eqn.params["tree"], eqn.invars)[:2]
            if _in_hbm(src) or _in_hbm(dst):
                moved, outside = moved + _window_bytes(src), True
            continue
        found = [_dmas(sub) for sub in jex.core.jaxprs_in_params(eqn.params)]
        if eqn.primitive.name == "cond" and found:
            found = [max(found)]  # one branch runs
        inner, loops, starts = sum(f[0] for f in found), sum(f[1] for f in found), any(f[2] for f in found)
        if eqn.primitive.name == "scan":
            length = float(eqn.params["length"])
            moved, iterations = moved + inner * length, iterations + (loops or float(starts)) * length
        else:
            moved, iterations, outside = moved + inner, iterations + loops, outside or starts
    return moved, iterations, outside


def _in_hbm(ref: Any) -> bool:
    """Whether a (transformed) ref lives in HBM, where a kernel reaches only by DMA."""
    aval = getattr(getattr(ref, "ref", ref), "aval", None)
    return str(getattr(getattr(aval, "memory_space", None), "value", "")).lower() in ("any", "hbm")


def _window_bytes(ref: Any) -> float:
    """Bytes of the window of a ref a DMA moves: its last indexer's shape, or the whole ref."""
    base = getattr(ref, "ref", ref)
    shape = tuple(base.aval.shape)
    for transform in getattr(ref, "transforms", ()):
        getter = getattr(transform, "get_indexer_shape", None)
        shape = tuple(getter()) if getter is not None else shape
    return float(math.prod(shape) * np.dtype(base.aval.dtype).itemsize)


def _work(jaxpr: Any, times: float) -> tuple[float, float, float]:
    """(MXU FLOPs, vector registers filled, elementwise operations) of one run of `jaxpr`, loops counted by their
    trip counts."""
    flops = regs = ops = 0.0
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            flops += 2.0 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[d] for d in contract)
        elif name in ("scan", "pjit", "jit", "run_scoped", "closed_call"):
            inner = _work(eqn.params["jaxpr"], float(eqn.params.get("length", 1)) if name == "scan" else 1.0)
            flops, regs, ops = flops + inner[0], regs + inner[1], ops + inner[2]
        elif name not in _FREE and getattr(eqn.outvars[0].aval, "shape", ()):
            regs += _vregs((eqn.invars[0] if name in _REDUCTIONS else eqn.outvars[0]).aval)
            ops += 1
    return flops * times, regs * times, ops * times


def _vregs(aval: Any) -> float:
    """How many vector registers an array fills: its last two dims in tiles of (8, 128) for 32-bit data, (16, 128)
    for 16-bit, so a (512, 1) column costs as much as a (512, 128) block."""
    shape = tuple(getattr(aval, "shape", ()))
    if not shape:
        return 0.0
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape[-2:]
    sublanes = 8 * max(1, 4 // max(1, np.dtype(aval.dtype).itemsize))
    return float(math.prod(shape[:-2]) * -(-rows // sublanes) * -(-cols // 128))
