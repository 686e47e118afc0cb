"""A grading's limits, and what the learner is told when one stops their code, with where it was.

A grading may use `timeout_s` seconds of CPU time (`exercise.toml`), counted over its whole process
tree: what an endless loop burns, however busy the machine is. One check may use `check_timeout_s`
of them (CHECK_SHARE of the whole by default; measured for each of the course's exercises), so that
a loop in one check is named within seconds, not at the grading's whole budget
(`course.engine.parent.stopwatch`). Waits that burn nothing (a sleep, a lock, a queue) are stopped by a
wall-clock cap, WALL_FACTOR times the CPU limit unless the exercise sets `wall_timeout_s`. Shortly
before it kills the process group, the parent asks the grading process for its Python stack
(`faulthandler`, on STACK_SIGNAL); the frames in the learner's own file say where their code was. A
process the kernel's out-of-memory killer ends (the machine's memory, or its container's cgroup
limit) dies of SIGKILL without a word; the kernel's own count of such kills (`oom_kill` in
/proc/vmstat, every memory cgroup's included) rising while it ran is what tells that death from a
crash.
"""

from __future__ import annotations

import contextlib
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VMSTAT = "/proc/vmstat"
WALL_FACTOR = 5
"""The wall-clock cap is this many times the CPU limit, unless the exercise says otherwise."""
STACK_SIGNAL = signal.SIGUSR1
"""Asks a grading process to write its threads' stacks (`faulthandler.register` in the plugin)."""
CHECK_SHARE = 3
"""Without `check_timeout_s`, one check may use this fraction of the grading's CPU time..."""
CHECK_FLOOR_S = 20.0
"""...but never less than this. The course's own exercises set `check_timeout_s` from what their checks
need (`benchmarks/bench_check_cpu.py`), with room for slower correct code and slower machines."""
LOOP_NAMED_WITHIN_S = 10.0
"""An endless loop in any check of the course's exercises is named within this many seconds of CPU time: each
exercise's `check_timeout_s`, and the stopwatch's overshoot, fit in it (`tests/engine/test_budgets.py`)."""
MAIN_THREAD = "main thread "
"""How the plugin names the main thread at the top of the stack file, before any dump."""
MAX_FRAMES = 8
_OUT_OF_MEMORY = re.compile(r"MemoryError|RESOURCE_EXHAUSTED|[Oo]ut of memory|std::bad_alloc")
"""How Python, XLA and C++ say an allocation failed (the address-space cap of `system.cap_memory`)."""
_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)", re.MULTILINE)
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')


@dataclass(frozen=True)
class Budget:
    """What one grading may use: CPU seconds of its process tree, wall-clock seconds, and CPU seconds
    of one check (0: no limit of its own)."""

    cpu_s: float
    wall_s: float
    check_cpu_s: float = 0.0


@dataclass(frozen=True)
class Deadline:
    """A moment (`time.monotonic()`) past which a grading is stopped whatever its own limits are left,
    with the sentence the learner reads: a budget the grading shares with others (an autograder's run)."""

    at: float
    why: str

    def watch(self, _pid: int = 0) -> str:
        """`why` once the moment has passed, '' before: what `isolation.run_isolated` asks its `watch`."""
        return self.why if time.monotonic() >= self.at else ""


@dataclass(frozen=True)
class Frame:
    """One frame of the learner's code: file name, line, function and the line's text."""

    file: str
    line: int
    function: str
    code: str = ""

    def __str__(self) -> str:
        code = f": `{self.code}`" if self.code else ""
        return f"{self.file} line {self.line}, in {self.function}{code}"


def budget(meta: Any) -> Budget:
    """The limits of an exercise's gradings, from its metadata (`course.registry.ExerciseMeta`)."""
    cpu = float(meta.timeout_s)
    wall = getattr(meta, "wall_timeout_s", None)
    check = getattr(meta, "check_timeout_s", None) or max(cpu / CHECK_SHARE, CHECK_FLOOR_S)
    # A check's limit as large as the grading's is no limit of its own: the grading's comes first.
    return Budget(cpu, float(wall) if wall else WALL_FACTOR * cpu, float(check) if check < cpu else 0.0)


def reason(kind: str, spent: Budget, frames: list[Frame]) -> str:
    """The sentence for a run stopped by the CPU limit ("cpu"), one check's CPU limit ("check") or the
    wall-clock cap ("wall"), then the learner's frames, innermost last."""
    at = f" at {frames[-1].file} line {frames[-1].line}, in {frames[-1].function}" if frames else ""
    if kind == "check":
        lead = (f"your code used {spent.check_cpu_s:g} s of CPU time in this check, the limit of one check, and was "
                f"stopped{at}; is there a loop that never ends?")
    elif kind == "cpu":
        lead = (f"your code used {spent.cpu_s:g} s of CPU time, this exercise's limit, and was stopped{at}; "
                "is there a loop that never ends?")
    else:
        lead = (f"your code waited {spent.wall_s:g} s of wall-clock time without finishing and was stopped{at}; "
                "is there a wait that never returns (a sleep, a lock, a queue, a process that never ends)?")
    return lead + where(frames)


def where(frames: list[Frame]) -> str:
    """The learner's frames as lines to append to a message, outermost first; '' without any."""
    if not frames:
        return ""
    return "\nwhere your code was (most recent call last):\n" + "\n".join(f"  {f}" for f in frames)


def learner_frames(dump: str, path: Path | None, source: str | None = None) -> list[Frame]:
    """The frames of the learner's file in a faulthandler dump, outermost first: the main thread's,
    or else the first thread that was running learner code. `source` gives the lines' text."""
    if path is None or not dump:
        return []
    main = -1
    if dump.startswith(MAIN_THREAD):
        with contextlib.suppress(ValueError):
            main = int(dump[len(MAIN_THREAD):].split("\n", 1)[0].strip(), 16)
    ordered = sorted(_threads(dump), key=lambda b: int(b[0], 16) != main)  # the main thread first
    lines = source.splitlines() if source else []
    for _, frames in ordered:
        mine = [f for f in frames if f[0] == str(path)]
        if mine:
            picked = list(reversed(mine))[-MAX_FRAMES:]  # faulthandler lists the innermost first
            return [Frame(path.name, n, fn, lines[n - 1].strip() if 0 < n <= len(lines) else "") for _, n, fn in picked]
    return []


def _threads(dump: str) -> list[tuple[str, list[tuple[str, int, str]]]]:
    """Each thread of the last dump in `dump`: its id and its frames (file, line, function), innermost first."""
    starts = list(_THREAD.finditer(dump))
    # Within one dump a blank line separates the threads; dumps follow one another without one.
    first = max((i for i, m in enumerate(starts) if dump[max(m.start() - 2, 0):m.start()] != "\n\n"), default=0)
    found = []
    for i in range(first, len(starts)):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(dump)
        frames = []
        for line in dump[starts[i].end():end].splitlines():
            match = _FRAME.match(line)
            if match:
                frames.append((match.group(1), int(match.group(2)), match.group(3)))
        found.append((starts[i].group(2), frames))
    return found


def oom_kills(vmstat: str = VMSTAT) -> int:
    """How many processes the kernel's out-of-memory killer has ended since boot (-1 where it does not say)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(vmstat).read_text(encoding="ascii").splitlines():
            name, _, count = line.partition(" ")
            if name == "oom_kill":
                return int(count)
    return -1


def memory_kill(returncode: int | None, before: int, vmstat: str = VMSTAT) -> str:
    """What the learner is told when the out-of-memory killer ended their grading ('' when it did not):
    the process died of SIGKILL, and the kernel counted a kill for memory since `before` was read."""
    if returncode != -signal.SIGKILL or before < 0 or oom_kills(vmstat) <= before:
        return ""
    from course.engine.contain import cgroups  # imported here: only a grading that died this way needs it

    limit = cgroups.memory_limit() or cgroups.physical_memory()
    return (f"your code was stopped for memory: the grading reached the memory limit of the machine it ran "
            f"on ({limit // 2**20} MiB) and the kernel ended it; is an array far larger than the task needs?")


def with_memory_limit(message: str, memory_mb: int) -> str:
    """`message`, followed by the exercise's memory limit when it tells of an allocation that failed: the
    learner then knows the limit their arrays must fit, not only that one did not."""
    if not _OUT_OF_MEMORY.search(message):
        return message
    return f"{message}\n(a grading of this exercise may use {memory_mb} MiB of memory)"
