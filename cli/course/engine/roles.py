"""The two processes of a split grading, as the plugin sees them: which checks each runs, and the link.

A check marked `@pytest.mark.judge`, and every check of a hidden grader, runs in the judge: a
process that never imports the learner's file and talks to it only through the executor
(`course.engine.remote`, `course.engine.serve`). Every other check runs in the executor, beside
the learner's code, as before. Without `--course-role` (a grading in one process: several
processes at once, `course inspect`) every check runs in the one process.
"""

from __future__ import annotations

import socket
import types
from pathlib import Path
from typing import Any

import pytest

JUDGE, EXECUTOR = "judge", "executor"
MARKER = "judge"
HIDDEN_DIR = "hidden"


def in_judge(item: pytest.Item) -> bool:
    """Whether a check runs in the judge: marked so, or a hidden check (its text never reaches learner code)."""
    return item.get_closest_marker(MARKER) is not None or item.path.parent.name == HIDDEN_DIR


class Split:
    """Plugin of one side of a split grading: keeps its own checks, and owns its end of the link."""

    def __init__(self, role: str, link_fd: int | None) -> None:
        self.role = role
        self.sock = socket.socket(fileno=link_fd) if link_fd is not None else None
        self._link = None
        self.executor: Any = None
        """The executor's answers to the judge (`course.engine.serve.Executor`), once it has served."""

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Keep the checks this side runs; the other side runs the rest."""
        keep = [i for i in items if in_judge(i) == (self.role == JUDGE)]
        gone = [i for i in items if i not in keep]
        if gone:
            config.hook.pytest_deselected(items=gone)
        items[:] = keep

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> object:
        """The executor answers the judge's requests first (its own checks would disturb the judge's
        compile counts), then runs its own checks once the judge is done."""
        if self.role == EXECUTOR and self.sock is not None:
            from course.engine.serve import Executor

            state = session.config.stash.get(_STATE, None)
            if state is not None:
                self.executor = Executor(self.sock, state[0], state[1])
                self.executor.serve()
            self.sock = None
        return (yield)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The judge is done: the executor may go on to its own checks."""
        if self._link is not None:
            self._link.done()
        elif self.sock is not None and self.role == JUDGE:
            self.sock.close()

    def shared(self) -> tuple[types.ModuleType, float] | None:
        """The module the executor imported for the judge and how much it grew the process, for the
        executor's own checks to share (the file is imported once per grading); None if it did not."""
        module = getattr(self.executor, "module", None)
        return (module, float(self.executor.import_mb)) if module is not None else None

    def remote(self, path: Path, fresh: bool = False) -> object:
        """The learner's module as the executor imported it (again, when `fresh`), as the judge uses it."""
        from course.engine import remote

        if self._link is None:
            if self.sock is None:
                raise remote.ExecutorGone(remote.GONE)
            self._link = remote.Link(self.sock)
        return remote.load(self._link, path, fresh)


_STATE = pytest.StashKey[tuple[Path, "bytes | None"]]()


def install(config: pytest.Config, role: str | None, link_fd: int | None, path: Path | None,
            source: bytes | None) -> Split | None:
    """Register the side's plugin when the grading is split; None when it runs in one process."""
    if role not in (JUDGE, EXECUTOR) or path is None:
        return None
    config.stash[_STATE] = (path, source)
    split = Split(role, link_fd)
    config.pluginmanager.register(split, "course-split")
    return split
