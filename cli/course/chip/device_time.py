"""The chip's own clock: how long each program ran on the device, read from a profile JAX wrote.

Wall-clock time around `block_until_ready` includes the host's dispatch and the wait, which is a
large part of a kernel under a millisecond. A profile (`jax.profiler.trace`) records, on the
device's plane, one event per program run with its start and duration on the device. This module
reads those events from the `.xplane.pb` file with `jax.profiler.ProfileData`, which needs no
TensorFlow or TensorBoard.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DeviceRun", "device_runs", "profile_files"]

# Where a TPU profile keeps one event per program run. The names are the profiler's own; a
# profile without them (a CPU's) has no device clock, and the caller falls back to wall time.
_DEVICE_PLANE_PREFIX = "/device:"
_MODULE_LINES = ("XLA Modules",)


@dataclass(frozen=True)
class DeviceRun:
    """One program run on a device: its name as the profile gives it, when it started, how long it ran."""

    name: str
    start_ns: float
    duration_ns: float


def profile_files(folder: Path) -> list[Path]:
    """The `.xplane.pb` files a `jax.profiler.trace(folder)` wrote, oldest first."""
    return sorted(folder.rglob("*.xplane.pb"), key=lambda p: p.stat().st_mtime)


def device_runs(files: Iterable[Path]) -> list[DeviceRun]:
    """Every program run on a device in these profiles, in order of start; empty when none has a device plane."""
    from jax.profiler import ProfileData

    runs: list[DeviceRun] = []
    for path in files:
        data = ProfileData.from_file(str(path))
        for plane in data.planes:
            if not plane.name.startswith(_DEVICE_PLANE_PREFIX) or "CPU" in plane.name.upper():
                continue
            for line in plane.lines:
                if line.name not in _MODULE_LINES:
                    continue
                runs.extend(DeviceRun(str(e.name), float(e.start_ns), float(e.duration_ns)) for e in line.events)
    return sorted(runs, key=lambda r: r.start_ns)
