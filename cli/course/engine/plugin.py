"""The pytest plugin the runner loads with `-p course.engine.plugin`: loads the learner's file, writes a signed report.

It is active only when `--course-report` is given. Hooks only collect; `course.engine.report` shapes
and signs the data. Nothing here prints: the parent owns the terminal and the verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from course.engine import report, submission
from course.grading.feedback import CheckFailed

_SESSION = pytest.StashKey["Grading"]()
HIDDEN_DIR = "hidden"
"""Checks collected from a grader in this folder are hidden: run only when instructors grade."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the options the runner passes; they do nothing unless given."""
    group = parser.getgroup("course", "course grading")
    group.addoption("--course-report", help="path of the signed report to write")
    group.addoption("--course-submission", help="path of the learner's file to load")
    group.addoption("--course-key-fd", type=int, help="file descriptor to read the signing key from")
    group.addoption("--course-events-fd", type=int, help="file descriptor to write one line per finished check to")
    group.addoption("--course-seed", type=int, default=0, help="seed of this run's random inputs")
    group.addoption("--course-hard-exit", action="store_true", help="end the process after reporting")


def pytest_configure(config: pytest.Config) -> None:
    """Read the key and the learner's source before any learner code can run."""
    config.addinivalue_line("markers", "points(n): points this check is worth (default 1)")
    path = config.getoption("--course-report", default=None)
    if not path:
        return
    sub = config.getoption("--course-submission")
    sub_path = Path(sub) if sub else None
    state = Grading(
        report_path=Path(path),
        key=_read_key(config.getoption("--course-key-fd")),
        submission_path=sub_path,
        source=submission.read_source(sub_path) if sub_path else None,
        seed=int(config.getoption("--course-seed")),
        hard_exit=bool(config.getoption("--course-hard-exit")),
        events_fd=config.getoption("--course-events-fd"),
    )
    config.stash[_SESSION] = state
    config.pluginmanager.register(state, "course-grading")


def _read_key(fd: int | None) -> bytes:
    """Read the signing key from the inherited pipe, then close it so learner code cannot."""
    if fd is None:
        return b""
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


@dataclass(eq=False)
class Grading:
    """One grading session's hooks and state: where to report, the key, the learner's file."""

    report_path: Path
    key: bytes
    submission_path: Path | None
    source: bytes | None
    seed: int
    hard_exit: bool
    events_fd: int | None = None
    checks: dict[str, report.Check] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    tampered: set[str] = field(default_factory=set)
    # Bound before learner code runs, so replacing `report.write_signed` or `Guard.changed`
    # afterwards cannot rewrite the report or blind the guard.
    write: Any = report.write_signed
    changed: Any = None
    stdio: tuple[int, int] | None = None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember a grader that cannot be collected: that is the platform's failure."""
        if report.failed:
            lines = str(report.longrepr).strip().splitlines()
            self.collect_errors.append(lines[-1] if lines else "the grader could not be collected")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """List the expected checks and sign them before any learner code runs."""
        for item in session.items:
            if item.name in self.checks:
                self.collect_errors.append(f"two checks are called {item.name}; every check needs its own name")
            self.checks[item.name] = report.Check(
                id=item.name,
                title=_title(item),
                max_score=_points(item),
                status="failed",
                message=UNFINISHED,
                hidden=item.path.parent.name == HIDDEN_DIR,
            )
        self.write(
            report.manifest_path(self.report_path),
            self.key,
            {
                "checks": [
                    {"id": c.id, "title": c.title, "max_score": c.max_score, "hidden": c.hidden}
                    for c in self.checks.values()
                ],
                "collect_errors": self.collect_errors,
            },
        )
        self.changed = report.Guard.snapshot([getattr(i, "module", None) for i in session.items]).changed
        self.stdio = _save_stdio()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Turn each phase's outcome into the check's status and a learner-facing message."""
        rep = yield
        _restore_stdio(self.stdio)
        if self.changed is not None and call.when == "teardown":
            # Checked after every check (once fixtures have undone their own patches), so a
            # patch that is undone before the end is still seen.
            self.tampered.update(self.changed())
        check = self.checks.get(item.name)
        if check is None:
            return rep
        undecided = check.message == UNFINISHED
        if call.excinfo is not None and (undecided or (call.when == "teardown" and check.status == "passed")):
            check.status, check.message = _describe(call.excinfo, self.submission_path, call.when)
        elif call.when == "call" and undecided:
            # A check passes only once its body has run to the end: skipping the call phase is no pass.
            check.status, check.message = "passed", ""
        if call.when == "call":
            check.duration_s = round(call.duration, 4)
        check.score = check.max_score if check.status == "passed" else 0.0
        if call.when == "teardown":
            self._announce(check)
        return rep

    def _announce(self, check: report.Check) -> None:
        """Tell the parent, for display, that a check has ended; a closed pipe is no matter."""
        if self.events_fd is None:
            return
        line = json.dumps({"id": check.id, "title": check.title, "status": check.status}) + "\n"
        try:
            os.write(self.events_fd, line.encode())
        except OSError:
            self.events_fd = None

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the signed final report, noting any tampering with the grading machinery."""
        if self.changed is not None:
            self.tampered.update(self.changed())
        self.write(
            self.report_path,
            self.key,
            {
                "seed": self.seed,
                "checks": [c.to_dict() for c in self.checks.values()],
                "collect_errors": self.collect_errors,
                "tampered": sorted(self.tampered),
                "pytest_exit": int(exitstatus),
            },
        )

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """End the process at once when asked, so threads a learner left running cannot hold it open."""
        if not self.hard_exit:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the learner may have closed it; nothing left to say
                stream.flush()
        os._exit(0)


def _title(item: pytest.Item) -> str:
    """The first line of the check's docstring, or its name."""
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else item.name


def _points(item: pytest.Item) -> float:
    """Points from `@pytest.mark.points(n)`, 1 by default."""
    marker = item.get_closest_marker("points")
    return float(marker.args[0]) if marker and marker.args else 1.0


def _describe(excinfo: pytest.ExceptionInfo[BaseException], path: Path | None, when: str) -> tuple[str, str]:
    """Classify an exception: the learner's mistake (failed), a skip, or the grader's own bug (error)."""
    exc = excinfo.value
    if isinstance(exc, submission.SubmissionError):
        return "failed", str(exc)
    if isinstance(exc, pytest.skip.Exception):
        return "skipped", str(exc)
    if isinstance(exc, CheckFailed):
        return "failed", str(exc)
    where = submission.learner_location(excinfo.tb, path)
    if isinstance(exc, MemoryError):
        return "failed", (
            f"your code ran out of memory{where}: it asked for more than this exercise allows; "
            "is an array far larger than the task needs?"
        )
    if isinstance(exc, SystemExit):
        return "failed", (
            f"your code called sys.exit({exc.code!r}) during the check{where}; "
            "a function must return its result, not end the program"
        )
    if when != "call" and not where:
        return "error", f"the grader failed while {_PHASES[when]}: {excinfo.exconly()}"
    if isinstance(exc, AssertionError) and not where:
        return "failed", str(exc).split("\nassert ")[0].strip() or excinfo.exconly()
    return "failed", f"your code raised {submission.describe_exception(exc)}{where}"


_PHASES = {"setup": "preparing the check", "teardown": "cleaning up after the check"}
UNFINISHED = (
    "this check did not run to the end: the grading session stopped before it finished "
    "(did your code close standard output, raise KeyboardInterrupt, or break the process?)"
)


def _save_stdio() -> tuple[int, int] | None:
    """Duplicates of the standard output and error descriptors, taken before learner code runs."""
    try:
        return os.dup(1), os.dup(2)
    except OSError:
        return None


def _restore_stdio(saved: tuple[int, int] | None) -> None:
    """Put back standard output or error if learner code closed them, so pytest can go on."""
    if saved is None:
        return
    for fd, copy in zip((1, 2), saved, strict=True):
        try:
            os.fstat(fd)
        except OSError:
            # If the copy is gone too, the checks left unfinished say what happened.
            with contextlib.suppress(OSError):
                os.dup2(copy, fd)


def _session(config: pytest.Config) -> Grading | None:
    """The active grading session, or None when the plugin is idle."""
    return config.stash.get(_SESSION, None)


@pytest.fixture
def submission_path(request: pytest.FixtureRequest) -> Path:
    """The path of the learner's file being graded."""
    state = _require(request.config)
    assert state.submission_path is not None
    return state.submission_path


@pytest.fixture(name="submission")
def submission_fixture(request: pytest.FixtureRequest) -> types.ModuleType:
    """The learner's module, executed afresh for this check from the source read at start-up."""
    state = _require(request.config)
    assert state.submission_path is not None
    return submission.load(state.submission_path, state.source)


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This check's seed: the run's seed mixed with the check's name, shown on failure."""
    state = _require(request.config)
    return submission.check_seed(state.seed, request.node.name)


@pytest.fixture(scope="session")
def run_seed(request: pytest.FixtureRequest) -> int:
    """The run's seed, the same for every check: for inputs that checks should share (a shape, say),
    so a shape compiled for one check is reused by the next."""
    return _require(request.config).seed


@pytest.fixture
def rng(seed: int) -> Any:
    """A NumPy random generator seeded for this check, so inputs differ on every run."""
    import numpy as np

    return np.random.default_rng(seed)


def _require(config: pytest.Config) -> Grading:
    """The session, or a clear error when a grader is run without the runner."""
    state = _session(config)
    if state is None or state.submission_path is None:
        raise pytest.UsageError("graders run under `course check`; pass --course-report and --course-submission")
    return state
