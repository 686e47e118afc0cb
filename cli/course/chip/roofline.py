"""What a TPU generation can do: its peak rates from JAX's own table, and the course's fitted costs of a kernel.

The peaks (bfloat16 FLOP/s, HBM bytes/s, VMEM) come from `pltpu.get_tpu_info()` on a chip, or
from JAX's table for a generation named by hand (`v5e`) where there is none. A kernel never
reaches the peaks, so an estimate also needs what a kernel really gets of them and what each
grid step costs; those five figures were fitted on a TPU v5e (benchmarks/bench_chip.py, part
`sweep`; benchmarks/README.md has the table) and are used for every generation, which is why an
estimate for another generation says it was calibrated on a v5e.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GENERATIONS", "Chip", "chip_named", "chip_here"]

GENERATIONS = ("v4", "v5e", "v5p", "v6e")
"""The generations an estimate may be asked for (`course bench --tpu NAME`)."""
SCOPED_VMEM = 16 * 2**20
"""The scoped VMEM a kernel gets by default on a v4, v5e or v6e core: `E1001: CompileTimeScopedVmemOom`
past it ("limit 16.00M" in the chip's words; a working set of exactly 16 MiB is refused too)."""

# Fitted on a TPU v5e (JAX 0.10.2), device clock: see the module docstring.
MXU_EFFICIENCY = 0.92
"""Of the peak FLOP/s, what large dots get: 4096³ bf16 at blocks (1024, 1024, 512) ran at 182 TFLOP/s of 197."""
HBM_EFFICIENCY = 0.80
"""Of the peak HBM bandwidth, what a kernel's pipelined blocks get: a copy in 2 MiB blocks moved 655 GB/s of 820."""
STEP_S = 0.17e-6
"""What a grid step costs beyond its work (the pipeline's bookkeeping and DMA issue): a copy in (8, 128) blocks
took 0.19 µs a step."""
VREG_OPS_PER_S = 1.5e9
"""Elementwise work on the vector unit, in vector registers a second (exp, max, sum and casts over a block, each
register an (8, 128) tile of 32-bit data); with VECTOR_OP_S, fitted on flash attention's steps, whose MXU work
alone leaves much of their time unexplained at small blocks."""
VECTOR_OP_S = 15e-9
"""What each elementwise operation of a step costs beyond its registers: its latency, which dominates small blocks."""


@dataclass(frozen=True)
class Chip:
    """One TPU generation: its peaks, and what a kernel gets of them."""

    name: str
    peak_flops: float
    """bfloat16 FLOP/s of one core."""
    hbm_bytes_per_s: float
    vmem_bytes: int
    measured_here: bool = False
    """Read from the chip this runs on, rather than from JAX's table for a name."""

    @property
    def flops_per_s(self) -> float:
        """What a kernel's dots really get."""
        return self.peak_flops * MXU_EFFICIENCY

    @property
    def bytes_per_s(self) -> float:
        """What a kernel's blocks really get of HBM."""
        return self.hbm_bytes_per_s * HBM_EFFICIENCY

    def fastest(self, flops: float, nbytes: float) -> float:
        """The roofline: the least time any program can take for this many FLOPs and HBM bytes, at the peaks."""
        return max(flops / self.peak_flops if flops else 0.0, nbytes / self.hbm_bytes_per_s if nbytes else 0.0)


def chip_named(name: str) -> Chip:
    """The chip of generation `name` (`v5e`, ...) from JAX's table; ValueError for a name it does not know."""
    from jax._src.pallas.mosaic import tpu_info  # the table is not public; `pltpu.get_tpu_info` needs a chip

    if name not in GENERATIONS:
        raise ValueError(f"no TPU generation named {name!r}; one of {', '.join(GENERATIONS)}")
    info = tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion(name), 1)
    return Chip(f"TPU {name}", float(info.bf16_ops_per_second), float(info.mem_bw_bytes_per_second),
                int(info.vmem_capacity_bytes))


def chip_here() -> Chip | None:
    """The chip JAX runs on, read with `pltpu.get_tpu_info()`; None when JAX has no TPU."""
    import jax

    if jax.default_backend() != "tpu":
        return None
    from jax.experimental.pallas import tpu as pltpu

    info = pltpu.get_tpu_info()
    return Chip(f"TPU {info.chip_version}", float(info.bf16_ops_per_second) * info.num_cores,
                float(info.mem_bw_bytes_per_second) * info.num_cores, int(info.vmem_capacity_bytes),
                measured_here=True)
