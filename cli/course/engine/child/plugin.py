"""The pytest plugin the runner loads (`-p course.engine.child.plugin`): loads the learner's file, reports each phase.

It is active only when `--course-report` is given. Before anything else it hands the signing
key to the notary (`course.engine.common.notary`) and keeps no copy; from then on it only tells the
notary what happened, and the notary alone writes the signed manifest and report. Each phase of
each check is judged in a wrapper around pytest's own hook for it, from the exception the phase
raised (or none), before any other code can look at it. Nothing here prints: the parent owns the
terminal and the verdict.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from course.engine.child import roles
from course.engine.child.grading import Grading, _verdict
from course.engine.common import notary, peers, streams, submission
from course.engine.contain import system
from course.engine.wire.report import manifest_path, stack_path

_SESSION = pytest.StashKey["Grading"]()


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
    """Load now what the armed guard would refuse to let load later, and count compiles from JAX's first import.

    NumPy loads ctypes, and ctypes opens the C library as it loads: a way to raw memory once
    learner code runs. JAX's part (whole writes to the compilation cache, the compile listener) is set
    up as JAX finishes importing: now, where it is loaded already (a warm worker's grading), or when the
    grader imports it at collection, before the guard's snapshot and any learner code, so the snapshot
    holds the listener. A grader that never imports JAX grades without paying for its import.
    """
    import ctypes  # noqa: F401

    import numpy  # noqa: F401

    if "jax" in sys.modules:
        _jax_loaded()
    else:
        sys.meta_path.insert(0, _AfterJax())


def _jax_loaded() -> None:
    """Before any compile: whole writes and touched hits in the compilation cache, and the compile listener."""
    from course.engine.common import compile_cache
    from course.grading.observe.calls import compiles

    compile_cache.in_grading()
    compiles.install_listener()


class _AfterJax(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `jax` is first imported, it has JAX's own loader run `_jax_loaded` after it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """JAX's own spec, whose loader sets the grading up once the package has loaded."""
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None:
            return spec
        load = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            load(module)
            _jax_loaded()

        loader.exec_module = exec_module
        return spec


def _serving() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Load an executor's request machinery now, before the guard's snapshot and the notary's list of trusted
    code: the functions that answer the judge are the grading machinery, and learner code must find them
    already noted. Returns the code allowed to vouch for an answer (`course.answer`) and to say that the
    judge's turn moved on (`course.turn`)."""
    from course.engine.executor import serve

    serve.preload()
    return (serve.Executor.answer.__code__,), (serve.Executor.serve.__code__,)


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
