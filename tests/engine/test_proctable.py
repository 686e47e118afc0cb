"""The shared process table: a process's children and descendants, one walk for every watcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from course.engine.contain import proctable, system

# A child that starts a grandchild and both sleep until killed: a tree of three levels.
TREE = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def tree() -> subprocess.Popen[bytes]:
    """A sleeping child with a sleeping grandchild, ended after the test."""
    child = subprocess.Popen([sys.executable, "-c", TREE])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not system.descendants(child.pid):  # the grandchild has started
        time.sleep(0.05)
    yield child
    for proc in system.descendants(child.pid):
        proc.kill()
    child.kill()
    child.wait()


def _fresh() -> None:
    """Forget the last walk, so the next question reads the table again."""
    proctable._state["at"] = float("-inf")


def test_children_and_descendants_are_those_of_the_os(tree: subprocess.Popen[bytes]) -> None:
    """Direct children only, or the whole tree below, as psutil sees them."""
    _fresh()
    grandchildren = [p.pid for p in system.descendants(tree.pid)]
    assert tree.pid in proctable.children(os.getpid())
    assert tree.pid not in proctable.children(tree.pid, recursive=True)
    assert proctable.children(tree.pid) == grandchildren
    mine = proctable.children(os.getpid(), recursive=True)
    assert tree.pid in mine and set(grandchildren) <= set(mine)


def test_one_walk_serves_every_question_for_a_tenth_of_a_second(
    tree: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within TABLE_S the table is not walked again; after it, it is (a new child is then seen)."""
    walks = []
    real = proctable._parents
    monkeypatch.setattr(proctable, "_parents", lambda: walks.append(1) or real())
    monkeypatch.setattr(proctable, "TABLE_S", 3600.0)
    _fresh()
    for _ in range(5):
        proctable.children(tree.pid, recursive=True)
        system.tree_cpu_s(tree.pid)
        system.grading_resident_mb(tree.pid)
    assert len(walks) == 1
    late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert late.pid not in proctable.children(os.getpid())  # the table is older than the child
        monkeypatch.setattr(proctable, "TABLE_S", 0.0)
        assert late.pid in proctable.children(os.getpid())
        assert len(walks) == 2
    finally:
        late.kill()
        late.wait()


def test_without_psutils_own_walk_the_public_one_gives_the_same_table(
    tree: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """psutil's `_ppid_map` is not public API: without it, `process_iter` builds the same table."""
    _fresh()
    fast = proctable.children(tree.pid, recursive=True)
    monkeypatch.delattr(proctable.psutil, "_ppid_map")
    _fresh()
    assert proctable.children(tree.pid, recursive=True) == fast
