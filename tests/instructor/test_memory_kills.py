"""Every limit names itself: a grading the kernel ends for memory says memory, with the limit it reached.

The kernel's out-of-memory killer (the machine's, or a container's cgroup limit, as Gradescope's
768 MiB) ends a process with SIGKILL and no word; what tells it from a crash is the kernel's own
count of such kills (`oom_kill` in /proc/vmstat) rising while the grading ran. The real test
makes a memory cgroup of 768 MiB, as Gradescope's container has, and grades a file that fills
2 GB in it; it runs where this process may make one (root, a writable memory controller).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from class_helpers import SOLUTION, class_course, write_folder
from course.engine.contain import limits

COURSE_BIN = Path(sys.executable).with_name("course")
LIMIT_MB = 768
HOG = "import numpy as np\n_FILLED = np.ones(250_000_000)  # 2 GB, every page written\n" + SOLUTION


def test_a_sigkill_is_said_to_be_memory_only_when_the_kernel_counted_a_memory_kill(tmp_path: Path) -> None:
    """SIGKILL with the count risen: memory, with the limit in MiB; no rise, another signal, or a kernel
    that keeps no count: not memory (the crash's own sentence stands)."""
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 100\noom_kill 3\n", encoding="ascii")
    assert limits.oom_kills(str(vmstat)) == 3
    assert limits.memory_kill(-signal.SIGKILL, 3, str(vmstat)) == ""
    vmstat.write_text("nr_free_pages 100\noom_kill 4\n", encoding="ascii")
    said = limits.memory_kill(-signal.SIGKILL, 3, str(vmstat))
    assert "stopped for memory" in said and " MiB)" in said
    assert limits.memory_kill(-signal.SIGSEGV, 3, str(vmstat)) == ""
    assert limits.memory_kill(-signal.SIGKILL, -1, str(vmstat)) == ""
    assert limits.oom_kills(str(tmp_path / "absent")) == -1


@contextlib.contextmanager
def memory_cgroup(limit_mb: int) -> Iterator[Path | None]:
    """A new memory cgroup held to `limit_mb` without swap: its `cgroup.procs`, or None where none can be made."""
    root = Path("/sys/fs/cgroup")
    v2 = (root / "cgroup.controllers").is_file()
    folder = (root if v2 else root / "memory") / f"course-test-{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir()
    except OSError:
        yield None
        return
    try:
        files = ({"memory.max": limit_mb << 20, "memory.swap.max": 0} if v2 else
                 {"memory.limit_in_bytes": limit_mb << 20, "memory.memsw.limit_in_bytes": limit_mb << 20})
        for name, value in files.items():
            with contextlib.suppress(OSError):  # no swap accounting: nothing to hold back there
                (folder / name).write_text(str(value), encoding="ascii")
        limit_file = folder / ("memory.max" if v2 else "memory.limit_in_bytes")
        yield folder / "cgroup.procs" if limit_file.is_file() else None
    finally:
        with contextlib.suppress(OSError):
            folder.rmdir()


@pytest.mark.slow
def test_a_grading_the_kernel_ends_for_memory_says_memory_with_the_limit(tmp_path: Path) -> None:
    """In a 768 MiB cgroup, a file that fills 2 GB fails with the memory limit named, not "did your code
    crash Python"; its classmate, graded in the same run, passes."""
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    write_folder(subs / "hog", {"ex_pass.py": HOG})
    write_folder(subs / "ada", {"ex_pass.py": SOLUTION})
    with memory_cgroup(LIMIT_MB) as procs:
        if procs is None:
            pytest.skip("this machine lets this process make no memory cgroup (root and a writable memory "
                        "controller are needed), so no kernel memory kill can be caused here")
        argv = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", str(COURSE_BIN), "grade", str(subs),
                "--out", str(out), "--course", str(course), "--jobs", "1", "--json", "--trust-submissions"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr
    hog = json.loads((out / "hog" / "results.json").read_text(encoding="utf-8"))["extra_data"]["exercises"]["ex_pass"]
    assert hog["status"] == "failed" and "stopped for memory" in hog["message"], hog["message"]
    assert f"({LIMIT_MB} MiB)" in hog["message"] and "crash Python" not in json.dumps(hog)
    assert json.loads(done.stdout)["totals"]["ada"] == 3.0


def test_an_allocation_over_the_exercises_cap_says_the_cap(tmp_path: Path) -> None:
    """Under the address-space cap an exercise's `memory_mb` sets, filling 2 GB raises MemoryError in the
    learner's file; the check says so and names the exercise's limit. (No cgroup needed: the cap is the
    grading's own.)"""
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    meta = course / "exercises" / "01_ex_pass" / "exercise.toml"
    meta.write_text(meta.read_text(encoding="utf-8") + "memory_mb = 300\n", encoding="utf-8")
    write_folder(subs / "hog", {"ex_pass.py": HOG})
    argv = [str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--jobs", "1", "--json",
            "--trust-submissions"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr
    hog = json.loads((out / "hog" / "results.json").read_text(encoding="utf-8"))["extra_data"]["exercises"]["ex_pass"]
    assert hog["status"] == "failed" and hog["checks"], hog
    for check in hog["checks"]:
        assert "MemoryError" in check["message"] and "may use 300 MiB of memory" in check["message"], check


def test_only_a_failed_allocation_is_followed_by_the_limit() -> None:
    """Python's MemoryError, XLA's RESOURCE_EXHAUSTED and C++'s bad_alloc get the limit; other messages do not."""
    for text in ("MemoryError: Unable to allocate 1.86 GiB", "RESOURCE_EXHAUSTED: Out of memory allocating 8 bytes",
                 "std::bad_alloc", "your code ran out of memory: it asked for more than this exercise allows"):
        assert limits.with_memory_limit(text, 512) == f"{text}\n(a grading of this exercise may use 512 MiB of memory)"
    assert limits.with_memory_limit("expected 4, got 5", 512) == "expected 4, got 5"


@pytest.mark.slow
def test_a_process_of_a_cohort_the_kernel_ends_for_memory_says_memory(tmp_path: Path) -> None:
    """An exercise graded in two processes: the one that fills 2 GB in a 768 MiB cgroup is named as
    stopped for memory, with the limit, not as a crash."""
    from course.registry import load_course

    fixture = Path(__file__).parents[1] / "fixtures" / "multi_course"
    exercise = load_course(fixture).get("mp_pass")
    hog = tmp_path / "mp_pass.py"
    hog.write_text("import numpy as np\n_FILLED = np.ones(250_000_000)  # 2 GB, every page written\n"
                   + exercise.solution_path.read_text(encoding="utf-8"), encoding="utf-8")
    code = ("import sys\nfrom pathlib import Path\nfrom course.engine.parent import runner\n"
            "from course.registry import load_course\n"
            f"e = load_course(Path({str(fixture)!r})).get('mp_pass')\n"
            f"r = runner.grade(e, Path({str(hog)!r}))\nprint(r.status, r.message, *(c.message for c in r.checks))\n")
    with memory_cgroup(LIMIT_MB) as procs:
        if procs is None:
            pytest.skip("this machine lets this process make no memory cgroup (root and a writable memory "
                        "controller are needed), so no kernel memory kill can be caused here")
        argv = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", sys.executable, "-c", code]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("failed") and "stopped for memory" in done.stdout, done.stdout
    assert f"({LIMIT_MB} MiB)" in done.stdout and "crash Python" not in done.stdout
