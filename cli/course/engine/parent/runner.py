"""Grade one exercise in a fresh, isolated pytest process and turn its signed report into a result.

The runner knows nothing of the terminal or of progress: it returns `ExerciseResult`s. The
verdict comes only from the report the plugin signs with a key sent through a pipe; the child's
exit code and output are never the verdict.
"""

from __future__ import annotations

import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from course import files, stubs
from course.engine.common import compile_cache
from course.engine.contain import limits
from course.engine.contain.protections import Confinement
from course.engine.parent import cohort, invocation, isolation, judging, tree
from course.engine.parent.invocation import base_environment, cancelled
from course.engine.parent.isolation import Launcher
from course.engine.parent.stopwatch import Stopwatch, what_holds
from course.engine.parent.syntax import result as not_compiling
from course.engine.parent.verdict import NOT_RUN, UNREPORTED, CheckEvent, ExerciseResult, verdict
from course.engine.wire import report
from course.engine.wire.gate import Gate
from course.registry import Exercise

if TYPE_CHECKING:
    from course.engine.parent.worker import Worker

__all__ = ["CANCELLED", "base_environment", "cancelled", "command_for", "grade",
           "grade_many", "grading_environment", "map_jobs", "not_tried", "precheck", "start_worker"]
CANCELLED = tree.CANCELLED
T = TypeVar("T")
R = TypeVar("R")


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
    skip_stub: bool = True,
    cancel: threading.Event | None = None,
    deadline: limits.Deadline | None = None,
    first_failure: bool = False,
    gate: Gate | None = None,
) -> ExerciseResult:
    """Grade `submission` against `exercise`'s grader in a fresh process (forked by `worker` if given).

    With `cache_dir`, XLA executables are kept there between gradings (see `base_environment`).
    `on_event` hears of each check as it ends, for display; the result is the verdict. With
    `hidden`, the exercise's hidden checks run too (instructors' grading, never `course check`).
    With `sandbox`, the process may read only the grader's folder and the submission's (and
    Python's own files), write only its work folder, and use no network (`course.engine.contain.sandbox`).
    With `read_only_cache`, the grading reads `cache_dir` and never writes to it (a cache other
    gradings share, which the sandbox lets it read but not write). With `skip_stub` (the default),
    a file that is still the exercise's stub is not graded: the result says it was not tried
    (`course.stubs`); `course validate` turns it off, to prove each stub fails. Setting
    `cancel` stops the grading at once: the result's status is then "cancelled", a non-verdict
    nobody records. With `deadline`, a grading still running at its moment is stopped like one at a
    limit, its check failing with the deadline's sentence. An exercise with `processes = N` is
    graded by N processes at once (`course.engine.parent.cohort`). With `first_failure`, a grading in one
    process or split in two stops at its first failing check, and the checks after it are not run
    (`course validate --mutants` needs only to know that a mutant fails); N processes run every check.
    With `gate`, the grading starts now but its checks wait until the gate opens (`course.engine.wire.gate`): the
    file is read where it is, then, and the caller checks it with `precheck` before opening (`course watch`,
    which grades in no sandbox). An exercise graded by several processes starts only once the gate opens.
    """
    seed = secrets.randbelow(2**31) if seed is None else seed
    started = time.monotonic()
    if cancel is not None and cancel.is_set():
        return cancelled(exercise.name, seed)
    early = precheck(exercise, submission, seed, hidden=hidden, skip_stub=skip_stub) if gate is None else None
    if early is not None:  # certain at once: no process, no JAX, no grader to wait for
        early.duration_s = time.monotonic() - started
        return early
    if cache_dir is not None and not read_only_cache:
        compile_cache.trim_once(cache_dir)  # once per command: gradings write it unbounded
    if exercise.meta.processes > 1:
        if gate is not None:  # several processes are not started ahead: this one waits, then grades as any
            if not gate.wait(cancel, lambda: True):
                return cancelled(exercise.name, seed)
            early = precheck(exercise, submission, seed, hidden=hidden, skip_stub=skip_stub)
            if early is not None:
                return early
        return cohort.grade(exercise, submission, seed=seed, worker=worker, cache_dir=cache_dir, on_event=on_event,
                            hidden=hidden, sandbox=sandbox, read_only_cache=read_only_cache, cancel=cancel,
                            deadline=deadline)
    workdir: Path | None = None
    judged: judging.JudgeRun | None = None
    try:
        workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))  # inside: a stop right after it removes it
        # The report has a folder of its own, closed to learner code once checks run; the working
        # folder beside it stays theirs.
        report_path = workdir / "report" / f"{secrets.token_hex(16)}.json"
        report_path.parent.mkdir(mode=0o700)
        key = secrets.token_bytes(32)
        split = judging.wanted(exercise, hidden)
        # A split grading's hidden checks run in the judge alone: a sandboxed executor never reads them.
        own = split and hidden and sandbox is not None
        policy = invocation.policy(sandbox, workdir, exercise, submission, own_graders=own)
        graded, folder = invocation.hand_over(policy, workdir, exercise, submission, own_graders=own)
        folder = folder or (invocation.graders_link(workdir, exercise) if sandbox else None)
        # The lines a stopped run's stack points at: with a gate, the file as it was let go, read after the run.
        source = invocation.source_text(submission) if gate is None else None
        budget = limits.budget(exercise.meta)
        oom_before = limits.oom_kills()
        checks = Stopwatch(exercise.name, budget, on_event)
        env = invocation.environment(exercise, cache_dir, read_only_cache)
        command = invocation.command(exercise, graded, workdir, report_path, seed, hidden and not split, folder,
                                     first_failure)
        judged, link = None, None
        if split:  # the judge starts first and beside it: it waits for the executor's answers
            theirs, link = judging.links()
            judged = judging.start(exercise, graded.resolve(), seed=seed, hidden=hidden, budget=budget, link=theirs,
                                 env=env, worker=worker, on_event=checks.raw_event, cancel=cancel,
                                 first_failure=first_failure, gate=gate)
            command = judging.role(command, "executor")
        outcome = isolation.run_isolated(
            command,
            key=key,
            cwd=workdir,
            env=env,
            timeout_s=budget.cpu_s,
            wall_s=budget.wall_s,
            memory_mb=exercise.meta.memory_mb,
            launcher=worker,
            on_event=checks.raw_event,
            sandbox=policy,
            stack_path=report.stack_path(report_path),
            marker=report.output_marker(key),
            cancel=cancel,
            watch=lambda pid: (deadline.watch(pid) if deadline is not None else "") or checks.watch(pid),
            link=link.detach() if link is not None else None,
            gate=gate,
        )
        source = source if gate is None else invocation.source_text(submission)
        if not (outcome.cancelled or outcome.timed_out or outcome.killed_for):
            outcome.killed_for = limits.memory_kill(outcome.returncode, oom_before)
        if checks.stopped is not None:  # stopped at one check's own limit: a timeout, as at the grading's
            outcome.timed_out, outcome.limit, outcome.killed_for = True, "check", ""
        if "memory" in outcome.killed_for:  # stopped for memory: say what holds it, when it is the import
            outcome.killed_for += what_holds(checks.import_mb)
        stopped = outcome.cancelled or (cancel is not None and cancel.is_set())  # killed for Ctrl-C: no verdict
        result = (cancelled(exercise.name, seed) if stopped
                  else verdict(exercise, report_path, key, outcome, graded.resolve(), source, split=judged is not None))
        if judged is not None:
            verdicts, judged = judged.wait(exercise.name), None
            result = result if stopped else judging.merge(exercise, result, verdicts)
        # A signal no limit of ours sent: the learner's own doing, or the platform stopping the job.
        ours = outcome.timed_out or bool(outcome.killed_for)
        result.ended_by = -outcome.returncode if (outcome.returncode or 0) < 0 and not ours else 0
        for check in result.checks:
            check.message = limits.with_memory_limit(check.message, exercise.meta.memory_mb)
        if first_failure:
            unrun_after_first_failure(result)
    finally:
        if judged is not None:  # the executor never started: the judge ends at its closed link
            judged.wait(exercise.name)
        files.remove_folder(workdir)
    # A grading started ahead of its save has waited at its gate: its duration is from the opening (the save) on.
    begun = gate.opened_at if gate is not None and gate.opened_at is not None else started
    result.seed, result.duration_s = seed, time.monotonic() - max(begun, started)
    return result


def precheck(exercise: Exercise, submission: Path, seed: int, *, hidden: bool = False,
             skip_stub: bool = True) -> ExerciseResult | None:
    """The verdict a file gets without a grading (missing, still the stub, not compiling), or None."""
    if not submission.is_file():
        why = f"not tried: {submission} does not exist; `course reset {exercise.name}` restores the stub"
        return not_tried(exercise, seed, why)
    untouched = stubs.untouched(exercise, submission) if skip_stub else ""
    if untouched:
        return not_tried(exercise, seed, untouched)
    return not_compiling(exercise, submission, seed, hidden=hidden)


def unrun_after_first_failure(result: ExerciseResult) -> None:
    """In a grading stopped at its first failing check: the checks after it that have no verdict of their
    own (never reported, never started, or a judge's check whose executor had stopped) were not run."""
    failed = [i for i, c in enumerate(result.checks) if c.status in ("failed", "error")]
    if not failed:
        return
    first = result.checks[failed[0]]
    for check in result.checks[failed[0] + 1:]:
        if check.status == "failed" and check.message in (UNREPORTED, report.UNFINISHED, report.GONE):
            check.status, check.score = NOT_RUN, 0.0
            check.message = f'not run: the grading stopped at its first failing check, "{first.title}"'


def not_tried(exercise: Exercise, seed: int, message: str) -> ExerciseResult:
    """The result of a file that was not graded because it was not tried: no points, and what it is worth."""
    return ExerciseResult(name=exercise.name, status="not_tried", max_score=exercise.max_score or 0.0, seed=seed,
                          message=message, not_tried=True)


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
    skip_stub: bool = True,
    cancel: threading.Event | None = None,
    first_failure: bool = False,
    gate: Gate | None = None,
) -> list[ExerciseResult]:
    """Grade several exercises, `jobs` at a time; results come back in the order given (`grade` says
    what each keyword does; one `gate` holds every grading).

    Setting `cancel` stops every grading in flight and those not started (status "cancelled")."""
    pairs = list(items)

    def one(pair: tuple[Exercise, Path]) -> ExerciseResult:
        """Grade one pair and report it."""
        result = grade(pair[0], pair[1], seed=seed, worker=worker, cache_dir=cache_dir, on_event=on_event,
                       hidden=hidden, sandbox=sandbox, skip_stub=skip_stub, cancel=cancel, first_failure=first_failure,
                       gate=gate)
        if on_result is not None:
            on_result(result)
        return result

    return map_jobs(one, pairs, jobs, cancel)


def map_jobs(fn: Callable[[T], R], items: list[T], jobs: int, cancel: threading.Event | None = None) -> list[R]:
    """`fn` over `items`, `jobs` at a time, results in order; Ctrl-C ends every grading in flight at once
    (setting `cancel` first, so that none of them is taken for a verdict)."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        return list(pool.map(fn, items))
    except BaseException:
        if cancel is not None:
            cancel.set()
        # The other threads wait on their gradings: end those now rather than at their timeouts.
        pool.shutdown(wait=False, cancel_futures=True)
        tree.stop_all()
        raise
    finally:
        pool.shutdown(wait=True)


def start_worker(cache_dir: Path | None = None) -> Worker | None:
    """A warm worker for gradings that follow one another (watch, several exercises); close it after.

    JAX reads its settings when imported, so the worker gets the same `cache_dir` as its gradings.
    None where the platform cannot run one (`course.engine.contain.system`): every grading then starts cold.
    """
    from course.engine.contain import system

    if not system.FEATURES.warm_worker:
        return None
    from course.engine.parent.worker import Worker

    return Worker(base_environment(cache_dir))


def command_for(exercise: Exercise, submission: Path, workdir: Path, report_path: Path, seed: int, *,
                tests: list[str], options: list[str]) -> list[str]:
    """The grading command of `exercise`, running the platform's `tests` in place of its graders, with
    `options` added: other checks of a learner's file in a grading's isolation (`course inspect`)."""
    command = invocation.command(exercise, submission, workdir, report_path, seed, False)
    at = command.index(str(exercise.grader_path))
    return [*command[:at], *tests, *command[at + 1:], *options]


def grading_environment(exercise: Exercise, cache_dir: Path | None) -> dict[str, str]:
    """The environment a grading of `exercise` runs in, for other runs in the same isolation."""
    return invocation.environment(exercise, cache_dir)
