"""The process table, read at most once every TABLE_S for everyone who watches a grading.

A grading is watched by polling: its tree's CPU time five times a second, its memory ten times.
Finding a process's children means reading the parent of every process on the machine (psutil
walks all of /proc), and with two processes per grading and several gradings at once those walks
cost `course` more CPU than anything else it does while it waits. One walk now serves every
watcher for TABLE_S; a process younger than that is seen at the next walk, a tenth of a second
later. Killing is not served from here: a sweep reads the table afresh (`system.descendants`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict

import psutil

TABLE_S = 0.1

_lock = threading.Lock()
_state: dict[str, object] = {"at": float("-inf"), "children": {}}


def children(pid: int, recursive: bool = False) -> list[int]:
    """The pids of `pid`'s children (or of all its descendants) as the latest walk saw them."""
    table = _table()
    found, todo, seen = [], [pid], {pid}
    while todo:
        for child in table.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                found.append(child)
                if recursive:
                    todo.append(child)
    return found


def _table() -> dict[int, list[int]]:
    """Parent pid to child pids, walked again when the last walk is older than TABLE_S."""
    with _lock:
        now = time.monotonic()
        if now - float(_state["at"]) >= TABLE_S:  # type: ignore[arg-type]
            table: dict[int, list[int]] = defaultdict(list)
            for child, parent in _parents().items():
                table[parent].append(child)
            _state["children"], _state["at"] = dict(table), now
        return _state["children"]  # type: ignore[return-value]


def _parents() -> dict[int, int]:
    """Every process's parent: psutil's own walk (what `Process.children` uses), else its public one."""
    walk = getattr(psutil, "_ppid_map", None)  # not public API: the fallback below keeps us working
    if callable(walk):
        with contextlib.suppress(Exception):
            return {int(k): int(v) for k, v in walk().items()}
    parents = {}
    for proc in psutil.process_iter(["ppid"]):
        with contextlib.suppress(Exception):
            parents[proc.pid] = int(proc.info["ppid"])
    return parents
