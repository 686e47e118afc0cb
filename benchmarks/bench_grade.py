"""SPEC §8: `course grade` of a synthetic class of 100 on 2 cores against a separate `course check --all` per student.

The class is made from the course's own files: each student's file for each exercise is the
reference solution, one of its wrong variants, the untouched stub, or missing, drawn with a
fixed seed; every third student hands in a zip. It prints students per minute, the ratio to
grading each student with a separate `course check --all` (timed on a sample of students,
`BENCH_BASELINE`, half before the class and half after, and scaled to the class), the peak
memory of the whole process tree, and the machine's load average, since other work on the
machine moves every figure. `BENCH_KEEP=1` keeps the class and its results (report.html).
"""

import contextlib
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import psutil
from _common import COURSE, ROOT

STUDENTS = int(os.environ.get("BENCH_STUDENTS", "100"))
BASELINE = int(os.environ.get("BENCH_BASELINE", "10"))
JOBS = os.environ.get("BENCH_JOBS", "2")
"""Gradings at once; `0` lets `course grade` decide from the CPUs and memory it may use."""
GOAL = 0.5


def synthetic_class(folder: Path) -> list[Path]:
    """One entry per student; returns the student folders (before zipping) for the baseline."""
    from course.registry import load_course

    rng = random.Random(20261130)
    exercises = load_course(ROOT).exercises
    made = []
    for k in range(STUDENTS):
        student = folder / f"student{k:03d}"
        student.mkdir(parents=True)
        for exercise in exercises:
            wrong = sorted(exercise.wrong_dir.glob("*.py"))
            pick = rng.random()
            source = (exercise.solution_path if pick < 0.4 else rng.choice(wrong) if pick < 0.85
                      else exercise.stub_path if pick < 0.95 else None)
            if source is not None:
                dest = student / exercise.stub_rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, dest)
        made.append(student)
    return made


def zip_some(students: list[Path]) -> None:
    """Every third student hands in a zip of their folder instead of the folder."""
    for student in students[::3]:
        with zipfile.ZipFile(student.with_suffix(".zip"), "w") as archive:
            for path in student.rglob("*.py"):
                archive.write(path, path.relative_to(student).as_posix())
        shutil.rmtree(student)


class PeakMemory:
    """The largest resident size of a process and all its descendants, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.peak = 0
        self._root = psutil.Process(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        """Sample until stopped."""
        while not self._done.is_set():
            total = 0
            try:
                for proc in [self._root, *self._root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += proc.memory_info().rss
            except psutil.Error:
                pass
            self.peak = max(self.peak, total)
            time.sleep(0.1)

    def stop(self) -> int:
        """Stop sampling; the peak in bytes."""
        self._done.set()
        self._thread.join()
        return self.peak


def time_grade(subs: Path, out: Path) -> tuple[float, int, str]:
    """Wall time, peak memory and the last lines of one `course grade` run of the whole class."""
    start = time.perf_counter()
    proc = subprocess.Popen([*COURSE, "grade", str(subs), "--out", str(out), "--course", str(ROOT), "--jobs", JOBS],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "400"})
    memory = PeakMemory(proc.pid)
    output, _ = proc.communicate()
    return time.perf_counter() - start, memory.stop(), output


def time_baseline(students: list[Path], scratch: Path) -> list[float]:
    """`course check --all` in a fresh workspace holding each sampled student's files, timed alone."""
    times = []
    for student in students:
        workspace = scratch / student.name
        subprocess.run([*COURSE, "--course", str(ROOT), "init", str(workspace)], check=True, capture_output=True)
        for path in student.rglob("*.py"):
            shutil.copy(path, workspace / path.relative_to(student))
        for exercise_file in (workspace / "exercises").rglob("*.py"):
            if not (student / exercise_file.relative_to(workspace)).exists():
                exercise_file.unlink()  # what the student did not hand in is not there either
        start = time.perf_counter()
        subprocess.run([*COURSE, "check", "--all", "--workspace", str(workspace), "--course", str(ROOT),
                        "--jobs", JOBS], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Build the class, grade it, time the baseline on a sample, print the figures."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    subs = scratch / "subs"
    students = synthetic_class(subs)
    sample = [Path(shutil.copytree(s, scratch / "sample" / s.name)) for s in students[:: max(1, STUDENTS // BASELINE)]]
    zip_some(students)
    # Half the baseline sample before the class and half after, so a change in the machine's load
    # during the run weighs on both sides alike.
    half = len(sample[:BASELINE]) // 2
    load_before = os.getloadavg()
    baseline = time_baseline(sample[:half], scratch / "ws")
    wall, peak, output = time_grade(subs, scratch / "out")
    baseline += time_baseline(sample[half:BASELINE], scratch / "ws")
    load_after = os.getloadavg()
    per_student = statistics.mean(baseline)
    ratio = wall / (per_student * STUDENTS)
    print(f"course grade of {STUDENTS} students ({JOBS} jobs): {wall:.1f} s -> {60 * STUDENTS / wall:.1f} students/min")
    print(f"separate `course check --all` per student: {per_student:.2f} s each (mean of {len(baseline)}, "
          f"median {statistics.median(baseline):.2f} s) -> {per_student * STUDENTS:.1f} s for the class")
    print(f"ratio: {ratio:.2f}x (goal <= {GOAL}x: {'meets' if ratio <= GOAL else 'misses'})")
    print(f"peak memory of course grade and all its processes: {peak / 2**20:.0f} MiB")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          "(2 cores; other work moves the figures)")
    used = [line for line in output.splitlines() if line.startswith("Ran ")]
    print(" ".join(used[-1:]) or "(course grade did not say what it ran)")
    summary = [line for line in output.splitlines() if line.startswith("Class mean")]
    print(" ".join(summary[-1:]))
    if os.environ.get("BENCH_KEEP"):
        print(f"kept the class and its results in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
