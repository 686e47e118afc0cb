"""Gradings at once: the CPUs the process may use (affinity, cgroup quota), capped so the peak fits in memory.

The cgroup files are faked in a temporary folder laid out as /sys/fs/cgroup is, with the
process's own /proc/self/cgroup beside it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from course.engine.contain import cgroups
from course.instructor import capacity

MIB = 2**20


def _cgroup(tmp_path: Path, proc: str, files: dict[str, str]) -> tuple[str, str]:
    """A fake cgroup tree under tmp_path/sys holding `files`, and a fake /proc/self/cgroup saying `proc`."""
    root = tmp_path / "sys"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n", encoding="utf-8")
    root.mkdir(exist_ok=True)
    (tmp_path / "cgroup").write_text(proc, encoding="utf-8")
    return str(root), str(tmp_path / "cgroup")


@pytest.fixture
def eight_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process allowed on eight CPUs."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)), raising=False)


def test_cgroup_v2_quota_and_memory_limit_are_read(tmp_path: Path, eight_cpus: None) -> None:
    """`cpu.max` 1.5 CPUs rounds to 2; `memory.max` is Gradescope's 768 MB; `memory.current` is the usage."""
    root, proc = _cgroup(tmp_path, "0::/\n", {"cpu.max": "150000 100000", "memory.max": str(768 * MIB),
                                               "memory.current": str(200 * MIB)})
    assert cgroups.cpu_limit(root, proc) == 2
    assert cgroups.memory_limit(root, proc) == 768 * MIB and cgroups.memory_used(root, proc) == 200 * MIB


def test_an_ancestor_cgroup_limits_too(tmp_path: Path, eight_cpus: None) -> None:
    """Limits of every cgroup above the process's own apply: the smallest wins; half a CPU is one."""
    root, proc = _cgroup(tmp_path, "0::/grading/job\n", {
        "grading/job/cpu.max": "max 100000", "grading/cpu.max": "50000 100000",
        "grading/job/memory.max": "max", "grading/memory.max": str(2048 * MIB), "memory.max": str(4096 * MIB)})
    assert cgroups.cpu_limit(root, proc) == 1
    assert cgroups.memory_limit(root, proc) == 2048 * MIB


def test_cgroup_v1_files_are_read_and_no_limit_means_none(tmp_path: Path, eight_cpus: None) -> None:
    """v1's `cpu.cfs_quota_us`/`cpu.cfs_period_us` and `memory.limit_in_bytes`; its huge "unlimited" is None."""
    root, proc = _cgroup(tmp_path, "4:memory:/box\n2:cpu,cpuacct:/box\n", {
        "cpu/box/cpu.cfs_quota_us": "300000", "cpu/box/cpu.cfs_period_us": "100000",
        "memory/box/memory.limit_in_bytes": "9223372036854771712", "memory/box/memory.usage_in_bytes": "1234"})
    assert cgroups.cpu_limit(root, proc) == 3
    assert cgroups.memory_limit(root, proc) is None and cgroups.memory_used(root, proc) == 1234
    unlimited = _cgroup(tmp_path / "u", "2:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"})
    assert cgroups.cpu_limit(*unlimited) == 8


def test_affinity_counts_not_the_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process pinned to one CPU of many runs one grading at a time, whatever `os.cpu_count()` says."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert cgroups.cpu_limit(*_cgroup(tmp_path, "0::/\n", {})) == 1


@pytest.mark.parametrize(("cpus", "limit", "base", "per", "jobs"), [
    (8, 768, 150, 300, 1),      # Gradescope's default container: one grading at a time
    (8, 4096, 300, 600, 4),     # memory, not CPUs, is the limit
    (2, 24576, 400, 600, 2),    # a roomy machine: the CPUs are
    (4, 300, 400, 600, 1),      # never fewer than one
])
def test_the_plan_fits_the_peak_in_memory(cpus: int, limit: int, base: int, per: int, jobs: int) -> None:
    """Gradings at once: at most the CPUs, and no more than fit, with headroom, beside what is in use."""
    assert capacity.plan(cpus, limit * MIB, base * MIB, per * MIB) == jobs


class _Machine(capacity.Budget):
    """A budget whose memory in use is whatever the test says."""

    now = 0

    def used(self) -> int:
        """What the test set."""
        return self.now


def test_the_gauge_measures_a_grading_and_resizes_the_slots() -> None:
    """Two gradings adding 700 MiB in a 2 GiB cgroup: one needs 350 MiB, so three fit with headroom."""
    machine = _Machine(cpus=8, limit=2048 * MIB, cgroup=True)
    machine.now = 300 * MIB
    slots = capacity.Slots(8)
    gauge = capacity.Gauge(machine, slots)
    slots.busy, machine.now = 2, 1000 * MIB
    gauge.sample()
    assert gauge.per_grading == 350 * MIB and slots.size == capacity.plan(8, 2048 * MIB, 300 * MIB, 350 * MIB) == 3
    machine.now = 1200 * MIB  # the same two now hold more: the share grows, the slots shrink
    gauge.sample()
    assert gauge.per_grading == 450 * MIB and slots.size == 2 and gauge.peak == 1200 * MIB
    fixed = capacity.Gauge(machine, capacity.Slots(5), fixed=True)  # --jobs 5: measured, never resized
    fixed.slots.busy = 1
    fixed.sample()
    assert fixed.slots.size == 5


def test_slots_hold_gradings_to_their_size() -> None:
    """No more blocks run at once than the slots allow, and a smaller size applies to those that start next."""
    slots, running, most = capacity.Slots(3), [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with slots.slot():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    slots.resize(2)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 2


def test_a_grading_of_several_processes_holds_a_slot_for_each() -> None:
    """Two slots of three held by one cohort leave one: a single grading runs beside it, a second cohort
    waits; a cohort larger than the slots runs alone once every slot is free, rather than never."""
    slots = capacity.Slots(3)
    with slots.slot(2):
        assert slots.busy == 2
        with slots.slot():
            assert slots.busy == 3
        started = threading.Event()

        def cohort() -> None:
            with slots.slot(2):
                started.set()

        thread = threading.Thread(target=cohort)
        thread.start()
        assert not started.wait(0.2)  # waiting: only one slot is free
    thread.join(timeout=10)
    assert started.is_set() and slots.busy == 0
    with slots.slot(5):
        assert slots.busy == 5
    assert slots.busy == 0


@pytest.mark.slow
def test_course_grade_gives_a_cohort_as_many_slots_as_it_has_processes(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Graded by `course grade` with two slots, each student's cohort of two processes asks for two, so two
    cohorts never run at once; every student still passes."""
    import shutil

    from course.instructor import grade
    from course.registry import load_course
    from support import FIXTURES

    asked: list[int] = []
    most = [0]

    class Watched(capacity.Slots):
        """The slots `course grade` makes, noting each request and the most held at once."""

        @contextmanager
        def slot(self, count: int = 1) -> Iterator[None]:
            asked.append(count)
            with super().slot(count):
                most[0] = max(most[0], self.busy)
                yield

    monkeypatch.setattr(capacity, "Slots", Watched)
    solution = (FIXTURES / "multi_course" / "solutions" / "01_mp_pass" / "mp_pass.py").read_text(encoding="utf-8")
    course = tmp_path / "course"
    shutil.copytree(FIXTURES / "multi_course", course)
    for name in ("ada", "alan", "grace"):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "mp_pass.py").write_text(solution, encoding="utf-8")
    plan = grade.prepare(load_course(course), tmp_path / "subs", tmp_path / "out", only=["mp_pass"])
    done = grade.run(plan, jobs=2)
    assert [s.records["mp_pass"].status for s in done.students] == ["passed"] * 3
    assert asked and set(asked) == {2} and most[0] == 2
