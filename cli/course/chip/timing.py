"""Timing a function on a chip as the best kernel graders do, and saying how sure the figure is.

The recipe, step by step:
- the first call compiles and is discarded, and so is the second (the first run of a program
  pays for more than its work: memory set-up, caches);
- every timed call gets fresh inputs, made before its clock starts and waited for, so that no
  call is served from a result it computed before;
- the number of timed calls adapts: at least `min_repeats`, then until the median's spread is
  small or the time budget is spent, at most `max_repeats`;
- the device's own clock is read from a profile where the backend records one (a TPU), else
  the wall clock around `block_until_ready`, and the result says which;
- the median is the figure, the minimum and the spread (interquartile range over the median)
  say how steady it was.
Checking the values after timing and refusing a time faster than the roofline allows are the
caller's (`course.chip.bench`), which knows the math and the chip.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course.chip.device_time import DeviceRun, device_runs, profile_files

__all__ = ["Timing", "summarize", "time_function"]

DEVICE, WALL = "device", "wall"


@dataclass(frozen=True)
class Timing:
    """The timed calls of one function: seconds per call on the clock it names, and the wall clock's too."""

    seconds: tuple[float, ...]
    clock: str
    """DEVICE (the chip's own clock, from a profile) or WALL (around `block_until_ready`)."""
    wall_seconds: tuple[float, ...]
    note: str = ""
    """Why the device clock was not used, when it was not."""

    @property
    def repeats(self) -> int:
        """How many calls were timed."""
        return len(self.seconds)

    @property
    def median(self) -> float:
        """The median time of one call, in seconds: the figure reported."""
        return statistics.median(self.seconds)

    @property
    def minimum(self) -> float:
        """The fastest call, in seconds."""
        return min(self.seconds)

    @property
    def spread(self) -> float:
        """The interquartile range over the median: 0.02 means the middle half of the calls lie within 2 %."""
        return summarize(self.seconds)[2]

    def to_json(self) -> dict[str, Any]:
        """The timing as plain data."""
        return {"clock": self.clock, "median_s": self.median, "min_s": self.minimum, "spread": self.spread,
                "repeats": self.repeats, "wall_median_s": statistics.median(self.wall_seconds), "note": self.note}


def summarize(seconds: Sequence[float]) -> tuple[float, float, float]:
    """(median, minimum, interquartile range over the median) of some timings."""
    if not seconds:
        raise ValueError("no timings to summarize")
    median = statistics.median(seconds)
    if len(seconds) < 4:
        return median, min(seconds), (max(seconds) - min(seconds)) / median if median else 0.0
    q1, _, q3 = statistics.quantiles(seconds, n=4, method="inclusive")
    return median, min(seconds), (q3 - q1) / median if median else 0.0


def steady(seconds: Sequence[float], target: float) -> bool:
    """Whether the median of these timings is known to within `target` (relative): the standard error
    of a median is about 1.25 times that of a mean, sigma / sqrt(n)."""
    if len(seconds) < 3:
        return False
    median = statistics.median(seconds)
    return median > 0 and 1.25 * statistics.stdev(seconds) / len(seconds) ** 0.5 <= target * median


def time_function(fn: Callable[..., Any], make_args: Callable[[int], tuple[Any, ...]], *, budget_s: float = 2.0,
                  min_repeats: int = 5, max_repeats: int = 200, target: float = 0.005,
                  profile: bool = True) -> tuple[Timing, Any, tuple[Any, ...]]:
    """Time `fn(*make_args(i))` as the module docstring says; returns the timing, the last call's result
    and the arguments it was given (for the caller to check the values after timing).

    `make_args(i)` makes the i-th call's inputs; it is called outside the clock and waited for.
    """
    import jax

    for i in (0, 1):  # the compile, then a first run: both discarded
        jax.block_until_ready(fn(*_ready(make_args(i))))
    folder = Path(tempfile.mkdtemp(prefix="course-profile-")) if profile else None
    try:
        return _timed(fn, make_args, folder, budget_s, min_repeats, max_repeats, target, profile)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _timed(fn: Callable[..., Any], make_args: Callable[[int], tuple[Any, ...]], folder: Path | None, budget_s: float,
           min_repeats: int, max_repeats: int, target: float, profile: bool) -> tuple[Timing, Any, tuple[Any, ...]]:
    """The timed loop of `time_function`, with its profiles in `folder` (None: wall clock only)."""
    import jax

    names = _program_names(fn, make_args, folder) if folder else None
    wall: list[float] = []
    started = time.perf_counter()
    out: Any = None
    args: tuple[Any, ...] = ()
    tracing = jax.profiler.trace(str(folder / "timed")) if folder and names else _Nothing()
    with tracing:
        while len(wall) < max_repeats:
            args = _ready(make_args(2 + len(wall)))
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(*args))
            wall.append(time.perf_counter() - t0)
            spent = time.perf_counter() - started
            if len(wall) >= min_repeats and (spent >= budget_s or steady(wall, target)):
                break
    timing = _timing(wall, folder / "timed" if folder and names else None, names,
                     "no profile was asked for" if not profile else "")
    return timing, out, args


def _ready(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments, waited for: their making is never on the clock."""
    import jax

    return tuple(jax.block_until_ready(args))


def _program_names(fn: Callable[..., Any], make_args: Callable[[int], tuple[Any, ...]],
                   folder: Path) -> list[str] | None:
    """The names of the programs one call of `fn` runs on the device, in order, from a profile of one call;
    None when the profile has no device plane (a CPU) or the profiler is unavailable."""
    import jax

    args = _ready(make_args(1))
    try:
        with jax.profiler.trace(str(folder / "names")):
            jax.block_until_ready(fn(*args))
    except Exception:  # noqa: BLE001 - a profiler that cannot start leaves the wall clock, which is said
        return None
    runs = device_runs(profile_files(folder / "names"))
    return [r.name for r in runs] or None


def _timing(wall: list[float], folder: Path | None, names: list[str] | None, why_not: str) -> Timing:
    """The timing on the device's clock when the profile has one run of `names` per timed call, else the wall's."""
    if folder is None or not names:
        return Timing(tuple(wall), WALL, tuple(wall), why_not or "this backend's profile has no device clock")
    per_call = _per_call(device_runs(profile_files(folder)), names, len(wall))
    if per_call is None:
        return Timing(tuple(wall), WALL, tuple(wall), "the profile did not show one run of the program per call")
    return Timing(tuple(per_call), DEVICE, tuple(wall))


def _per_call(runs: list[DeviceRun], names: list[str], calls: int) -> list[float] | None:
    """The device seconds of each timed call: the runs of the call's own programs, grouped in order."""
    wanted = set(names)
    mine = [r for r in runs if r.name in wanted]
    if len(mine) != calls * len(names):
        return None
    size = len(names)
    return [sum(r.duration_ns for r in mine[i * size:(i + 1) * size]) / 1e9 for i in range(calls)]


class _Nothing:
    """A context manager that does nothing (no profile)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
