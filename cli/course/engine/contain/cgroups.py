"""What this machine and its cgroups allow a batch of gradings: CPUs, memory limit, memory used."""

from __future__ import annotations

import contextlib
import os

import psutil

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def _text(path: str) -> str | None:
    """A small file's stripped text, None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _cgroup_dirs(root: str, proc: str, controller: str) -> list[str]:
    """The folders of this process's cgroup for `controller`, from its own up to the root (every
    ancestor's limit applies too). v2 files sit in `root/<path>`, v1 files in `root/<controller>/<path>`."""
    found = []
    for line in (_text(proc) or "").splitlines():
        _, names, path = ([*line.split(":", 2), "", ""])[:3]
        if names == "" or controller in names.split(","):
            base = root if names == "" else os.path.join(root, controller)
            parts = [p for p in path.split("/") if p]
            found += [os.path.join(base, *parts[:k]) for k in range(len(parts), -1, -1)]
    return found


def _values(folders: list[str], name: str) -> list[str]:
    """The text of every `name` file in `folders` that exists, in order."""
    return [v for v in (_text(os.path.join(f, name)) for f in folders) if v is not None]


def cpu_limit(root: str = CGROUP_ROOT, proc: str = PROC_CGROUP) -> int:
    """CPUs this process may use: its affinity, lowered by any cgroup CPU quota (`cpu.max`, or v1's
    `cpu.cfs_quota_us` over `cpu.cfs_period_us`), rounded to the nearest whole CPU and at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quotas = []
    folders = _cgroup_dirs(root, proc, "cpu")
    for text in _values(folders, "cpu.max"):
        quota, _, period = (text.split() + ["100000"])[:3]
        if quota != "max" and period.isdigit() and quota.isdigit() and int(period):
            quotas.append(int(quota) / int(period))
    for folder in folders:
        quota, period = (_text(os.path.join(folder, f"cpu.cfs_{k}_us")) for k in ("quota", "period"))
        if quota and period and quota.isdigit() and period.isdigit() and int(quota) > 0 and int(period) > 0:
            quotas.append(int(quota) / int(period))
    if quotas:
        cpus = min(cpus, max(1, int(min(quotas) + 0.5)))
    return max(1, cpus)


def memory_limit(root: str = CGROUP_ROOT, proc: str = PROC_CGROUP) -> int | None:
    """The bytes this process's cgroup may hold (`memory.max`, or v1's `memory.limit_in_bytes`), the
    smallest along its ancestors; None when there is no limit or no cgroup to read."""
    folders = _cgroup_dirs(root, proc, "memory")
    limits = [int(v) for v in _values(folders, "memory.max") + _values(folders, "memory.limit_in_bytes") if v.isdigit()]
    limits = [v for v in limits if v < 2**60]  # v1 writes a huge number for "no limit"
    return min(limits) if limits else None


def memory_used(root: str = CGROUP_ROOT, proc: str = PROC_CGROUP) -> int | None:
    """The bytes this process's cgroup holds now (`memory.current`, v1 `memory.usage_in_bytes`), or None."""
    folders = _cgroup_dirs(root, proc, "memory")
    for name in ("memory.current", "memory.usage_in_bytes"):
        found = [v for v in _values(folders, name) if v.isdigit()]
        if found:
            return int(found[0])  # its own cgroup's, the first folder that has the file
    return None


def tree_resident(pid: int | None = None) -> int:
    """Resident bytes of a process and all its descendants (shared pages counted in each: an upper bound)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except (psutil.Error, OSError):
        return 0
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError):
            total += proc.memory_info().rss
    return total


def physical_memory() -> int:
    """The machine's memory in bytes."""
    return int(psutil.virtual_memory().total)
