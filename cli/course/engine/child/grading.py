"""One grading session in the grading process: what was collected, each check's phases, what the notary is told."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from course.engine.child import roles
from course.engine.common import guard, notary, peers, streams, submission
from course.engine.wire import gate
from course.engine.wire.report import RUNNING

HIDDEN_DIR = roles.HIDDEN_DIR
"""Checks collected from a grader in this folder are hidden: run only when instructors grade."""


def _start_backend() -> None:
    """Start JAX's backend now, while the grading waits at its gate, rather than at the first check."""
    import jax

    jax.devices()


@dataclass
class Check:
    """One expected check: what the manifest says of it, and its phases as seen so far (for display)."""

    id: str
    title: str
    max_score: float
    hidden: bool
    item: int
    phases: dict[str, str] = field(default_factory=dict)


def _verdict(state: Grading, item: pytest.Item, when: str, exc: BaseException | None,
             _describe: Any = submission.describe, _notify: Any = notary.notify, _id: Any = id) -> None:
    """The verdict on one phase, from what it raised; the notary takes verdicts only from here.

    What it calls is bound when the module is imported (the armed guard refuses rewriting a
    default of the machinery), so learner code cannot swap the judge between two phases.
    """
    streams.restore_stdio(state.stdio)
    if when == "teardown":
        state.flush_output()  # what the check printed goes before the notary's mark that ends its share
    status, message = ("passed", "") if exc is None else _describe(exc, state.submission_path, when)
    check = state.checks.get(item.name)
    if check is not None:
        check.phases[when] = status
    _notify("course.verdict", item.name, when, status, message, _id(item))


def _phase(state: Grading, item: pytest.Item, when: str, _verdict: Any = _verdict) -> Iterator[Any]:
    """Run one phase inside pytest's hook for it and judge how it ended: the exception it raised, or none."""
    try:
        result = yield
    except BaseException as exc:
        _verdict(state, item, when, exc)
        raise
    _verdict(state, item, when, None)
    return result


@dataclass(eq=False)
class Grading:
    """One grading session's hooks: what to load, what was collected, what to tell the notary."""

    submission_path: Path | None
    source: bytes | None
    seed: int
    hard_exit: bool
    events_fd: int | None = None
    stack_fd: int | None = None
    """Where faulthandler writes the stacks when the parent asks (kept open for the whole run)."""
    streams: tuple[Any, ...] = ()
    """Python's standard output and error as pytest started, flushed at the end of each check."""
    checks: dict[str, Check] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    stdio: tuple[int, int] | None = None
    import_mb: float = 0.0
    """How much the last import of the learner's file grew the process, in MiB."""
    split: roles.Split | None = None
    """This side of a split grading (`course.engine.child.roles`), or None when one process runs every check."""
    go_fd: int | None = None
    """The go pipe (`course.engine.wire.gate`): the checks wait for it, and the learner's file is read then."""

    def flush_output(self) -> None:
        """Flush the standard streams Python buffers; one the learner closed or detached is no matter."""
        for stream in self.streams:
            with contextlib.suppress(Exception):
                stream.flush()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember a grader that cannot be collected: that is the platform's failure."""
        if report.failed:
            lines = str(report.longrepr).strip().splitlines()
            self.collect_errors.append(lines[-1] if lines else "the grader could not be collected")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """List the expected checks for the notary, with a snapshot of the machinery, before any learner code runs."""
        for item in session.items:
            if item.name in self.checks:
                self.collect_errors.append(f"two checks are called {item.name}; every check needs its own name")
            self.checks[item.name] = Check(item.name, _title(item), _points(item),
                                           item.path.parent.name == HIDDEN_DIR, id(item))
        listed = tuple({"id": c.id, "title": c.title, "max_score": c.max_score, "hidden": c.hidden}
                       for c in self.checks.values())
        # The other side's checks (a split grading), so a report of theirs that goes missing still counts them.
        elsewhere = tuple({"id": i.name, "title": _title(i), "max_score": _points(i),
                           "hidden": i.path.parent.name == HIDDEN_DIR} for i in (self.split.elsewhere if self.split
                                                                                else ()))
        # A judge runs no learner code, so nothing there can rebind the machinery: it checks nothing.
        judge = self.split is not None and self.split.role == roles.JUDGE
        snap = guard.EMPTY if judge else guard.snapshot(getattr(i, "module", None) for i in session.items)
        self.stdio = streams.save_stdio()
        self.flush_output()
        notary.notify("course.manifest", listed, tuple(self.collect_errors),
                      tuple(c.item for c in self.checks.values()), self.seed, snap, elsewhere)
        self._let_go(session.config)
        self._emit({"checks": "begin"})  # no learner code has run before this line

    def _let_go(self, config: pytest.Config) -> None:
        """Wait at the gate (starting JAX's backend meanwhile when asked), then read the learner's file."""
        if self.go_fd is None:
            return
        if not gate.await_go(self.go_fd, warm=_start_backend):
            os._exit(0)  # the grading was called off before it began: nothing to report
        self.go_fd = None
        if self.submission_path is not None:
            self.source = submission.read_source(self.submission_path)
            submission.remember(self.submission_path, self.source)
            roles.set_source(config, self.source)

    def _emit(self, event: dict[str, Any]) -> None:
        """Tell the parent one event (display and diagnosis only); a closed pipe is no matter."""
        if self.events_fd is None:
            return
        try:
            os.write(self.events_fd, (json.dumps(event) + "\n").encode())
        except OSError:
            self.events_fd = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item, _phase: Any = _phase) -> Iterator[Any]:
        """Judge the setup phase (loading the learner's file happens here)."""
        if peers.active():
            peers.announce(_title(item))
        self._announce(item.name, RUNNING)
        return (yield from _phase(self, item, "setup"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item, _phase: Any = _phase) -> Iterator[Any]:
        """Judge the check itself: it passes only if its body runs to the end."""
        return (yield from _phase(self, item, "call"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None,
                                _phase: Any = _phase) -> Iterator[Any]:
        """Judge the clean-up, then announce the check's outcome for display."""
        try:
            return (yield from _phase(self, item, "teardown"))
        finally:
            self._announce(item.name)

    def _announce(self, name: str, status: str = "") -> None:
        """Tell the parent, for display and its per-check CPU limit, that a check has started (`status`
        RUNNING) or ended; a closed pipe is no matter."""
        check = self.checks.get(name)
        if self.events_fd is None or check is None:
            return
        statuses = [check.phases.get(p, "failed") for p in ("setup", "call", "teardown")]
        status = status or next((s for s in statuses if s != "passed"), "passed")
        event = {"id": check.id, "title": check.title, "status": status}
        if status == RUNNING and self.import_mb:
            event["import_mb"] = round(self.import_mb)  # what holds memory, should the grading run out
        self._emit(event)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Ask the notary for the final report."""
        notary.notify("course.finish", int(exitstatus))

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """End the process at once when asked, so threads a learner left running cannot hold it open.

        One of several processes first waits to be ended: the others may still need it."""
        if not self.hard_exit:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the learner may have closed it; nothing left to say
                stream.flush()
        peers.linger()
        os._exit(0)


def _title(item: pytest.Item) -> str:
    """The first line of the check's docstring, or its name."""
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else item.name


def _points(item: pytest.Item) -> float:
    """Points from `@pytest.mark.points(n)`, 1 by default."""
    marker = item.get_closest_marker("points")
    return float(marker.args[0]) if marker and marker.args else 1.0
