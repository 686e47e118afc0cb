"""Grade one exercise in a fresh, isolated pytest process and turn its signed report into a result.

The runner knows nothing of the terminal or of progress: it returns `ExerciseResult`s. The
verdict comes only from the report the plugin signs with a key sent through a pipe; the child's
exit code and output are never the verdict.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from course.engine import isolation, system
from course.engine.isolation import Launcher
from course.engine.sandbox import Confinement, Policy
from course.engine.verdict import CheckEvent, ExerciseResult, verdict
from course.registry import Exercise

if TYPE_CHECKING:
    from course.engine.worker import Worker

CACHE_MAX_BYTES = 256 * 2**20
T = TypeVar("T")
R = TypeVar("R")
READ_ONLY_CACHE = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "1e9", "JAX_COMPILATION_CACHE_MAX_SIZE": "-1"}
"""Settings that make JAX only read its compilation cache: no compile is slow enough to be written,
and without a size limit there is no lock file or access time to write either."""


def grade(
    exercise: Exercise,
    submission: Path,
    *,
    seed: int | None = None,
    worker: Launcher | None = None,
    cache_dir: Path | None = None,
    on_event: Callable[[CheckEvent], None] | None = None,
    hidden: bool = False,
    sandbox: Confinement | None = None,
    read_only_cache: bool = False,
) -> ExerciseResult:
    """Grade `submission` against `exercise`'s grader in a fresh process (forked by `worker` if given).

    With `cache_dir`, XLA executables are kept there between gradings (see `base_environment`).
    `on_event` hears of each check as it ends, for display; the result is the verdict. With
    `hidden`, the exercise's hidden checks run too (instructors' grading, never `course check`).
    With `sandbox`, the process may read only the grader's folder and the submission's (and
    Python's own files), write only its work folder, and use no network (`course.engine.sandbox`).
    With `read_only_cache`, the grading reads `cache_dir` and never writes to it (a cache other
    gradings share, which the sandbox lets it read but not write).
    """
    seed = secrets.randbelow(2**31) if seed is None else seed
    if not submission.is_file():
        return ExerciseResult(
            name=exercise.name,
            status="failed",
            seed=seed,
            not_tried=True,
            message=f"not tried: {submission} does not exist; `course reset {exercise.name}` restores the stub",
        )
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
    try:
        # The report has a folder of its own, closed to learner code once checks run; the working
        # folder beside it stays theirs.
        report_path = workdir / "report" / f"{secrets.token_hex(16)}.json"
        report_path.parent.mkdir(mode=0o700)
        key = secrets.token_bytes(32)
        folder = _graders_seen_from(workdir, exercise) if sandbox else None
        outcome = isolation.run_isolated(
            _command(exercise, submission, workdir, report_path, seed, hidden, folder),
            key=key,
            cwd=workdir,
            env=_environment(exercise, cache_dir, read_only_cache),
            timeout_s=exercise.meta.timeout_s,
            memory_mb=exercise.meta.memory_mb,
            launcher=worker,
            on_event=_events_for(exercise.name, on_event),
            sandbox=_policy(sandbox, workdir, exercise, submission),
        )
        result = verdict(exercise, report_path, key, outcome)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.seed, result.duration_s = seed, time.monotonic() - started
    return result


def _policy(sandbox: Confinement | None, workdir: Path, exercise: Exercise, submission: Path) -> Policy | None:
    """What this grading may touch: its work folder, the grader's folder and the submission's."""
    if sandbox is None:
        return None
    readable = [str(exercise.grader_path.parent), str(submission.resolve().parent)]
    return sandbox.policy(workdir=str(workdir), read=readable)


def _events_for(name: str, on_event: Callable[[CheckEvent], None] | None) -> Callable[[dict], None] | None:
    """Turn the grading's raw event lines into `CheckEvent`s for `on_event`."""
    if on_event is None:
        return None

    def forward(raw: dict) -> None:
        """Pass on one well-formed event."""
        event = CheckEvent.parse(name, raw)
        if event is not None:
            on_event(event)

    return forward


def _graders_seen_from(workdir: Path, exercise: Exercise) -> Path:
    """A link in the work folder to the grader's folder, so a sandboxed pytest, which lists each
    folder on the way from its root folder to a test file, lists only folders it may read."""
    link = workdir / "graders"
    link.symlink_to(exercise.grader_path.parent, target_is_directory=True)
    return link


def _command(exercise: Exercise, submission: Path, workdir: Path, report_path: Path, seed: int, hidden: bool,
             folder: Path | None = None) -> list[str]:
    """The pytest command line; `{keyfd}` and `{eventsfd}` are filled in by the launcher. The
    graders are read from `folder` when given (a link to the grader's folder), else where they are."""
    folder = folder or exercise.grader_path.parent
    graders = [str(folder / exercise.grader_path.name)]
    if hidden and exercise.hidden_grader_path.is_file():
        graders.append(str(folder / "hidden" / exercise.hidden_grader_path.name))
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        sys.executable,
        "-I",
        "-m",
        "pytest",
        *graders,
        "-p",
        "course.engine.plugin",
        "--noconftest",
        "-p",
        "no:cacheprovider",
        # These two only warn about exceptions nobody caught, and their clean-up runs the
        # garbage collector over JAX's large heap several times: a quarter second per grading.
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        "-c",
        str(ini),
        "--rootdir",
        str(workdir),
        "-q",
        "-s",
        "--tb=short",
        "--course-report",
        str(report_path),
        "--course-submission",
        str(submission.resolve()),
        "--course-seed",
        str(seed),
        "--course-key-fd",
        "{keyfd}",
        "--course-events-fd",
        "{eventsfd}",
        "--course-hard-exit",
    ]


def _environment(exercise: Exercise, cache_dir: Path | None, read_only_cache: bool = False) -> dict[str, str]:
    """A small, clean environment: CPU JAX with the device count the grader needs."""
    devices = f"--xla_force_host_platform_device_count={exercise.meta.devices}"
    only_read = READ_ONLY_CACHE if cache_dir is not None and read_only_cache else {}
    return {**base_environment(cache_dir), "XLA_FLAGS": devices, **only_read}


def base_environment(cache_dir: Path | None = None) -> dict[str, str]:
    """The grading environment without the device count, which a warm worker sets per grading.

    With `cache_dir`, JAX's persistent compilation cache keeps every executable there: a
    re-check of unchanged code loads its programs instead of compiling them again, which is most
    of a grading's time on the CPU. Compile events still fire on a cache hit, so compile counts
    are unchanged. The cache holds at most CACHE_MAX_BYTES (least recently used go first).
    """
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        {
            "JAX_PLATFORMS": "cpu",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            # Inherited by every descendant: lets the sweep recognise an escaped one as ours.
            system.GRADING_MARKER[0]: system.GRADING_MARKER[1],
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
    )
    if cache_dir is not None:
        env.update(
            {
                "JAX_COMPILATION_CACHE_DIR": str(cache_dir),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                "JAX_COMPILATION_CACHE_MAX_SIZE": str(CACHE_MAX_BYTES),
            }
        )
    return env


def grade_many(
    items: Iterable[tuple[Exercise, Path]],
    *,
    jobs: int = 1,
    seed: int | None = None,
    on_result: Callable[[ExerciseResult], None] | None = None,
    on_event: Callable[[CheckEvent], None] | None = None,
    worker: Launcher | None = None,
    cache_dir: Path | None = None,
    hidden: bool = False,
    sandbox: Confinement | None = None,
) -> list[ExerciseResult]:
    """Grade several exercises, `jobs` at a time; results come back in the order given."""
    pairs = list(items)

    def one(pair: tuple[Exercise, Path]) -> ExerciseResult:
        """Grade one pair and report it."""
        result = grade(pair[0], pair[1], seed=seed, worker=worker, cache_dir=cache_dir, on_event=on_event,
                       hidden=hidden, sandbox=sandbox)
        if on_result is not None:
            on_result(result)
        return result

    return map_jobs(one, pairs, jobs)


def map_jobs(fn: Callable[[T], R], items: list[T], jobs: int) -> list[R]:
    """`fn` over `items`, `jobs` at a time, results in order; Ctrl-C ends every grading in flight at once."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        return list(pool.map(fn, items))
    except BaseException:
        # The other threads wait on their gradings: end those now rather than at their timeouts.
        pool.shutdown(wait=False, cancel_futures=True)
        isolation.stop_all()
        raise
    finally:
        pool.shutdown(wait=True)


def start_worker(cache_dir: Path | None = None) -> Worker | None:
    """A warm worker for gradings that follow one another (watch, several exercises); close it after.

    JAX reads its settings when imported, so the worker gets the same `cache_dir` as its gradings.
    None where the platform cannot run one (`course.engine.system`): every grading then starts cold.
    """
    from course.engine import system

    if not system.FEATURES.warm_worker:
        return None
    from course.engine.worker import Worker

    return Worker(base_environment(cache_dir))


def command_for(exercise: Exercise, submission: Path, workdir: Path, report_path: Path, seed: int, *,
                tests: list[str], options: list[str]) -> list[str]:
    """The grading command of `exercise`, running the platform's `tests` in place of its graders, with
    `options` added: other checks of a learner's file in a grading's isolation (`course inspect`)."""
    command = _command(exercise, submission, workdir, report_path, seed, False)
    at = command.index(str(exercise.grader_path))
    return [*command[:at], *tests, *command[at + 1:], *options]


def grading_environment(exercise: Exercise, cache_dir: Path | None) -> dict[str, str]:
    """The environment a grading of `exercise` runs in, for other runs in the same isolation."""
    return _environment(exercise, cache_dir)
