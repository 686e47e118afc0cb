"""The pytest plugin the runner loads (`-p course.engine.child.plugin`): loads the learner's file, reports each phase.

It is active only when `--course-report` is given. Before anything else it hands the signing
key to the notary (`course.engine.common.notary`) and keeps no copy; from then on it only tells the
notary what happened, and the notary alone writes the signed manifest and report. Each phase of
each check is judged in a wrapper around pytest's own hook for it, from the exception the phase
raised (or none), before any other code can look at it. Nothing here prints: the parent owns the
terminal and the verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from course.engine.child import roles
from course.engine.common import guard, notary, peers, streams, submission
from course.engine.contain import system
from course.engine.wire import gate
from course.engine.wire.report import RUNNING, manifest_path, stack_path

_SESSION = pytest.StashKey["Grading"]()
HIDDEN_DIR = roles.HIDDEN_DIR
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
    group.addoption(peers.OPTION, help="I/N@HOST:PORT: this is process I of N, joined at HOST:PORT")
    group.addoption("--course-role", choices=(roles.JUDGE, roles.EXECUTOR), help="this side of a split grading")
    group.addoption("--course-link-fd", type=int, help="file descriptor of the socket between judge and executor")
    group.addoption("--course-go-fd", type=int, help="file descriptor to wait on before the checks run")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Hand the key to the notary and read the learner's source, before any learner code can run.

    Last of all plugins, so pytest's own terminal reporter exists to be taken away (`_quiet`).
    """
    config.addinivalue_line("markers", "points(n): points this check is worth (default 1)")
    config.addinivalue_line("markers", "judge: this check runs in the judge, which never imports the learner's file")
    path = config.getoption("--course-report", default=None)
    if not path:
        return
    _quiet(config)
    sub = config.getoption("--course-submission")
    sub_path = Path(sub) if sub else None
    system.not_dumpable()  # before the key arrives: no process of the learner's may read this one's memory
    _preload()
    answers, turns = _serving() if config.getoption("--course-role") == roles.EXECUTOR else ((), ())
    stack = streams.stack_on_request(stack_path(Path(path)))
    notary.install(
        key=_read_key(config.getoption("--course-key-fd")),
        manifest_path=manifest_path(Path(path)),
        report_path=Path(path),
        callers={
            "course.manifest": (Grading.pytest_collection_finish.__code__,),
            "course.verdict": (_verdict.__code__,),
            "course.finish": (Grading.pytest_sessionfinish.__code__,),
            "course.answer": answers,
            "course.turn": turns,
        },
        guarded_files=(_package_dir("course"), _package_dir("_pytest"), _package_dir("pluggy"),
                       *(os.path.dirname(os.path.abspath(a)) + os.sep for a in config.args)),
    )
    go_fd = config.getoption("--course-go-fd")
    state = Grading(
        submission_path=sub_path,
        source=submission.read_source(sub_path) if sub_path and go_fd is None else None,  # else once let go
        seed=int(config.getoption("--course-seed")),
        hard_exit=bool(config.getoption("--course-hard-exit")),
        events_fd=config.getoption("--course-events-fd"),
        stack_fd=stack,
        streams=(sys.stdout, sys.stderr),
        go_fd=go_fd,
    )
    streams.line_buffered(state.streams)
    if sub_path is not None:
        submission.remember(sub_path, state.source)
    state.split = roles.install(config, config.getoption("--course-role"), config.getoption("--course-link-fd"),
                                sub_path, state.source)
    config.stash[_SESSION] = state
    config.pluginmanager.register(state, "course-grading")
    place = config.getoption(peers.OPTION, default=None)
    if place:
        peers.join(peers.Place.parse(place), state.events_fd)  # before any learner code is imported


def _quiet(config: pytest.Config) -> None:
    """Take pytest's terminal output away (its options still parse): what the grading prints is
    then the learner's code's (and JAX's) alone, cut into each check's share."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        config.pluginmanager.unregister(reporter)


def _preload() -> None:
    """Load now what the armed guard would refuse to let load later, and start counting compiles.

    NumPy loads ctypes, and ctypes opens the C library as it loads: a way to raw memory once
    learner code runs. The compile listener is installed now so the notary's snapshot holds it.
    """
    import ctypes  # noqa: F401

    import numpy  # noqa: F401

    from course.engine.common import compile_cache
    from course.grading.observe.calls import compiles

    compile_cache.in_grading()  # before any compile: whole writes and touched hits
    compiles.install_listener()


def _serving() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Load an executor's request machinery now, before the guard's snapshot and the notary's list of trusted
    code: the functions that answer the judge are the grading machinery, and learner code must find them
    already noted. Returns the code allowed to vouch for an answer (`course.answer`) and to say that the
    judge's turn moved on (`course.turn`)."""
    from course.engine.executor import serve

    serve.preload()
    return (serve.Executor.answer.__code__,), (serve.Executor.serve.__code__,)


def _start_backend() -> None:
    """Start JAX's backend now, while the grading waits at its gate, rather than at the first check."""
    import jax

    jax.devices()


def _package_dir(name: str) -> str:
    """The folder of an imported package, ending with a separator."""
    module = sys.modules[name]
    return os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep


def _read_key(fd: int | None) -> bytes:
    """Read the signing key from the inherited pipe, then close it so learner code cannot."""
    if fd is None:
        return b""
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


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
        snap = ((), ()) if judge else guard.snapshot(getattr(i, "module", None) for i in session.items)
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


def _session(config: pytest.Config) -> Grading | None:
    """The active grading session, or None when the plugin is idle."""
    return config.stash.get(_SESSION, None)


@pytest.fixture
def submission_path(request: pytest.FixtureRequest) -> Path:
    """The path of the learner's file being graded."""
    state = _require(request.config)
    assert state.submission_path is not None
    return state.submission_path


@pytest.fixture(name="submission", scope="session")
def submission_fixture(request: pytest.FixtureRequest) -> types.ModuleType:
    """The learner's module, imported once per grading from the source read at start-up and shared by
    every check; an import that fails fails each check with the same traceback. In a judge, the module
    as the executor imported it; in an executor, the module it imported for the judge, if it did."""
    state = _require(request.config)
    assert state.submission_path is not None
    if state.split is not None and state.split.role == roles.JUDGE:
        return state.split.remote(state.submission_path)  # type: ignore[return-value]
    shared = state.split.shared() if state.split is not None else None
    if shared is not None:
        state.import_mb = shared[1]
        return shared[0]
    return submission.import_for(state)


@pytest.fixture
def fresh_submission(request: pytest.FixtureRequest) -> types.ModuleType:
    """The learner's module imported again for this check alone: for a check that counts what a first
    call compiles or builds, which the shared module's earlier calls (or its own caches) would hide."""
    state = _require(request.config)
    if state.split is not None and state.split.role == roles.JUDGE:
        assert state.submission_path is not None
        return state.split.remote(state.submission_path, fresh=True)  # type: ignore[return-value]
    return submission.import_for(state)


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
