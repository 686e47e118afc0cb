"""The two processes of a split grading, as the plugin sees them: which checks each runs, and the link.

A check marked `@pytest.mark.judge`, and every check of a hidden grader, runs in the judge: a
process that never imports the learner's file and talks to it only through the executor
(`course.engine.judge.remote`, `course.engine.executor.serve`). Every other check runs in the executor, beside
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
        self.order: dict[str, int] = {}
        self.executor: Any = None
        """The executor's answers to the judge (`course.engine.executor.serve.Executor`), once it has served."""
        self.public_failed = False
        """A public check of this side failed (a hidden one comes after every public check)."""
        self.elsewhere: list[pytest.Item] = []
        """The checks the other side runs, as collected here (the manifest names them)."""

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Keep the checks this side runs; the other side runs the rest. Both note each public check's
        position in the grader, the order the two sides take turns in."""
        public = [i for i in items if i.path.parent.name != HIDDEN_DIR]
        self.order = {item.nodeid: n for n, item in enumerate(public)}
        keep = [i for i in items if in_judge(i) == (self.role == JUDGE)]
        gone = [i for i in items if i not in keep]
        self.elsewhere = gone
        if gone:
            config.hook.pytest_deselected(items=gone)
        items[:] = keep

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> object:
        """The executor answers the judge's requests between its own checks, then until the judge is done."""
        if self.role == EXECUTOR and self.sock is not None:
            from course.engine.executor.serve import Executor

            state = session.config.stash.get(_STATE, None)
            if state is not None:
                self.executor = Executor(self.sock, state[0], state[1])
            self.sock = None
        try:
            return (yield)
        finally:
            if self.executor is not None:
                if _stops_at_first_failure(session):  # the judge finds the link closed, and stops too
                    self.executor.close()
                else:
                    self.executor.serve()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        """The two sides take turns in the grader's order, as the checks ran in one process: the judge says
        which check it starts, and the executor answers it until the judge is past the executor's next
        check (so a check's state, and where a stopped grading was, are as the grader reads). When the
        grading stops at its first failing check, each side stops when the other has."""
        position = self.order.get(item.nodeid)
        if position is None:
            return
        if self.role == EXECUTOR and self.executor is not None:
            self.executor.serve(until=position)
            if self.executor.stopped:  # the judge stopped at its first failing check: so does this side
                item.session.shouldfail = "the judge stopped at its first failing check"
                return True
        elif self.role == JUDGE and (self._link is not None or self.sock is not None):
            self._judge_link().tell({"op": "at", "index": position})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note a public check's failure: a grading that stops at its first one stops the other side with it."""
        if report.failed and report.nodeid in self.order:
            self.public_failed = True

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The judge is done: the executor may go on (unless the judge stopped at a public check that
        failed), and ends its service."""
        if self._link is not None:
            self._link.done(stopped=self.public_failed and _stops_at_first_failure(session))
        elif self.sock is not None and self.role == JUDGE:
            self.sock.close()

    def shared(self) -> tuple[types.ModuleType, float] | None:
        """The learner's module, imported once for the judge's requests and the executor's own checks, and
        how much it grew the process; None outside a split executor."""
        if self.executor is None:
            return None
        return self.executor.shared(), float(self.executor.import_mb)

    def remote(self, path: Path, fresh: bool = False) -> object:
        """The learner's module as the executor imported it (again, when `fresh`), as the judge uses it."""
        from course.engine.judge import remote

        return remote.load(self._judge_link(), path, fresh)

    def _judge_link(self) -> Any:
        """The judge's end of the link (`course.engine.judge.remote.Link`), made on first use."""
        from course.engine.judge import remote

        if self._link is None:
            if self.sock is None:
                raise remote.ExecutorGone(remote.GONE)
            self._link = remote.Link(self.sock)
        return self._link


def _stops_at_first_failure(session: pytest.Session) -> bool:
    """Whether this side stopped at its first failing check (`-x`, as `course validate --mutants` grades)."""
    return bool(session.shouldfail) and session.config.option.maxfail == 1


_STATE = pytest.StashKey[tuple[Path, "bytes | None"]]()


def set_source(config: pytest.Config, source: bytes | None) -> None:
    """The learner's file as read once the grading was let go (`course.engine.wire.gate`)."""
    state = config.stash.get(_STATE, None)
    if state is not None:
        config.stash[_STATE] = (state[0], source)


def install(config: pytest.Config, role: str | None, link_fd: int | None, path: Path | None,
            source: bytes | None) -> Split | None:
    """Register the side's plugin when the grading is split; None when it runs in one process."""
    if role not in (JUDGE, EXECUTOR) or path is None:
        return None
    config.stash[_STATE] = (path, source)
    split = Split(role, link_fd)
    config.pluginmanager.register(split, "course-split")
    return split
