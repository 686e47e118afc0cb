"""Loading a learner's file by path, and describing what their code did, or how a check ended, in plain words."""

from __future__ import annotations

import gc
import hashlib
import linecache
import os
import sys
import types
from pathlib import Path
from typing import Protocol

import pytest

from course.grading.feedback import CheckFailed, PlatformFailure
from course.grading.judge.source import describe_exception, learner_location, learner_traceback, syntax_message

__all__ = ["PlatformFailure", "SubmissionError", "check_seed", "describe", "describe_exception", "import_for",
           "learner_location", "load", "read_source", "remember"]


class SubmissionError(Exception):
    """The learner's file could not be loaded; the message carries their trimmed traceback."""




def read_source(path: Path) -> bytes | None:
    """The file's bytes, read once before the first check, so later edits or deletions change nothing."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def remember(path: Path, source: bytes | None) -> None:
    """Give linecache the graded text of `path`: tracebacks, JAX's source info and the judge's reading of the
    learner's names then see what was graded, even if the file changes while the grading runs."""
    if source is not None:
        text = source.decode("utf-8", errors="replace")
        linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))


def load(path: Path, source: bytes | None) -> types.ModuleType:
    """Execute the learner's source as a fresh module named after the file; raise SubmissionError.

    Before it runs, kernels are made to run under the strict TPU interpreter where JAX has no TPU: the
    learner's file names no interpreter, so that the same file compiles on a TPU. A grader that reads JAX
    imports it as it is collected (every grader of the course does, `tests/content`); one that does not grades
    no kernel, and its grading does not pay for importing JAX here.
    """
    if source is None:
        raise SubmissionError(f"your file {path.name} could not be read; run `course reset` to restore the stub")
    if "jax" in sys.modules:
        from course.grading.observe.calls.tpu import strict_by_default

        strict_by_default()
    name = path.stem
    remember(path, source)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - running the learner's code is the point
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are mistakes too
        sys.modules.pop(name, None)
        raise SubmissionError(_import_message(exc, path)) from None
    return module


RELEASE_ABOVE_MB = 64.0
"""A fresh import after one that grew the process by more than this first collects the last one."""


class Importing(Protocol):
    """What a grading knows of the learner's file: where it is, the source read before the first check, and how
    much the last import of it grew the process (kept for the message should memory run out)."""

    submission_path: Path | None
    source: bytes | None
    import_mb: float


def import_for(grading: Importing) -> types.ModuleType:
    """Import the learner's file for a grading, noting in `grading.import_mb` how much it grew the process.

    A grading imports the file once and its checks share the module, so what the import costs (a
    table at module level, a `time.sleep`) is paid once. A check that needs a module of its own
    (one that counts what a first call compiles) imports it again; a large earlier import is then
    collected first if nothing holds it any more.
    """
    path = grading.submission_path
    assert path is not None
    release(path, grading.import_mb)
    before = resident_mb()
    try:
        return load(path, grading.source)
    finally:
        grading.import_mb = resident_mb() - before


def resident_mb() -> float:
    """This process's resident memory in MiB (Linux), else its peak so far (elsewhere); 0 if unknown."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def release(path: Path, grew_mb: float) -> None:
    """Before the learner's file is imported again, free the last import if it was large.

    A module and its functions refer to each other (a function's globals are its namespace), so an
    old import is freed only by the cycle collector, which may not run for many checks. By now
    pytest has dropped the last check's fixtures, so only `sys.modules` and the cycle hold it, unless
    the shared import or a grader still does: a grader may keep a learner's function from one check
    for the next (`strict_runs.jitted_once`), and then its namespace stays whole.
    """
    if grew_mb <= RELEASE_ABOVE_MB:
        return  # a small import: not worth a full collection (tens of milliseconds with JAX loaded)
    sys.modules.pop(path.stem, None)
    gc.collect()


def _import_message(exc: BaseException, path: Path) -> str:
    """One sentence and the learner's traceback for a file that fails while being imported."""
    if isinstance(exc, SyntaxError):
        return syntax_message(exc)
    if isinstance(exc, SystemExit):
        lead = f"your file called sys.exit({exc.code!r}) while being imported, so no check can run"
    else:
        lead = f"your file raised {describe_exception(exc)} while being imported, so no check can run"
    frames = learner_traceback(exc.__traceback__, path)
    return f"{lead}:\n{frames}" if frames else lead


def check_seed(run_seed: int, check_id: str) -> int:
    """A per-check seed derived from the run's seed, stable across processes."""
    digest = hashlib.sha256(f"{run_seed}:{check_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def describe(exc: BaseException, path: Path | None, when: str) -> tuple[str, str]:
    """Classify an exception: the learner's mistake (failed), a skip, or the grader's own bug (error).

    Never "passed": a phase passes only when it raised nothing.
    """
    where = learner_location(exc.__traceback__, path)
    if isinstance(exc, SubmissionError):
        return "failed", str(exc)
    if isinstance(exc, pytest.skip.Exception):
        if where:  # only a grader may skip a check; from the learner's code it is a way out
            return "failed", f"your code skipped the check{where}; a function must return its result"
        return "skipped", str(exc)
    if isinstance(exc, CheckFailed):
        return "failed", str(exc)
    if isinstance(exc, PlatformFailure):
        return "error", f"{exc}; this is a problem with the course's grading, not your code"
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
        shown = pytest.ExceptionInfo.from_exception(exc).exconly()
        return "error", f"the grader failed while {_PHASES[when]}: {shown}"
    if isinstance(exc, AssertionError) and not where:
        return "failed", str(exc).split("\nassert ")[0].strip() or repr(exc)
    return "failed", f"your code raised {describe_exception(exc)}{where}"


_PHASES = {"setup": "preparing the check", "teardown": "cleaning up after the check"}
