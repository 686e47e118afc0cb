"""Whether this machine has a TPU, told without importing JAX (which would cost a second, and open the chip).

A TPU machine has Google's runtime library (`libtpu`, a Python package beside JAX) and the chip's
device files (`/dev/accel*` on older TPU VMs, `/dev/vfio` on a v5e or v6e), and its VM image sets
`TPU_*` variables. `COURSE_CHIP=0` turns everything about the chip off, `COURSE_CHIP=1` on; a
`JAX_PLATFORMS` without `tpu` in it says the learner wants no chip.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["tpu_here"]


def tpu_here(env: Mapping[str, str] | None = None, dev: Path = Path("/dev")) -> bool:
    """Whether `course` should ask the chip: a TPU's runtime and device files are here, or COURSE_CHIP=1."""
    env = os.environ if env is None else env
    asked = env.get("COURSE_CHIP", "").strip().lower()
    if asked in ("0", "off", "no", "false"):
        return False
    if asked in ("1", "on", "yes", "true"):
        return True
    platforms = [p.strip() for p in env.get("JAX_PLATFORMS", "").lower().split(",") if p.strip()]
    if platforms and "tpu" not in platforms:
        return False
    return _runtime(env) and (_device_files(dev) or "TPU_ACCELERATOR_TYPE" in env)


def _runtime(env: Mapping[str, str]) -> bool:
    """Whether the TPU runtime can be loaded: the `libtpu` package, or a library named by TPU_LIBRARY_PATH."""
    if env.get("TPU_LIBRARY_PATH") and Path(env["TPU_LIBRARY_PATH"]).is_file():
        return True
    try:
        return importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        return False


def _device_files(dev: Path) -> bool:
    """Whether the chip's device files are there: /dev/accel0..., or a non-empty /dev/vfio."""
    try:
        if any(p.name.startswith("accel") for p in dev.iterdir()):
            return True
        return any((dev / "vfio").iterdir())
    except OSError:
        return False
