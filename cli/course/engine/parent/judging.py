"""A grading split in two processes: the judge, which never runs learner code, and the executor, which does.

The runner starts both at once with a socket between them (`course.engine.child.roles`). The judge runs
the checks marked `judge` and the hidden ones, with its own key and report in a folder of its own;
the learner's code, and every process it starts, cannot read its memory (another PID namespace,
not dumpable), sign its report or reach its checks' text. Its verdict on each of its checks is
therefore the grader's own: a wrong value cannot pass by patching the comparison. The two take
turns in the grader's order (the executor answers the judge between its own checks), and the two
verdicts are merged here in that order.
"""

from __future__ import annotations

import ast
import functools
import re
import secrets
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from course import files, pyast
from course.engine.contain import limits, protections
from course.engine.contain.limits import Budget
from course.engine.parent import invocation, isolation, tree
from course.engine.parent.verdict import (
    NOT_RUN,
    UNREPORTED,
    CheckResult,
    ExerciseResult,
    missing_check,
    summarize,
    verdict,
)
from course.engine.wire import report
from course.engine.wire.gate import Gate
from course.registry import Exercise

_MARKED = re.compile(r"\bmark\.judge\b")
UNVOUCHED = ("the report of the process running your code does not vouch for every answer the judge received: it "
             "was changed after it was written, or your code answered the judge itself. No check can be trusted, "
             "so none counts")
CHANGED = ("the judge's report was removed or changed while your code ran, so no check can be trusted, and none "
           "counts; does your code (or a process it starts) delete or write files outside its own folder?")
WALL_MARGIN_S = 30.0
"""The judge may outlive the executor's wall limit by this much: it waits on the executor, which ends first."""


def wanted(exercise: Exercise, hidden: bool) -> bool:
    """Whether `exercise`'s grading is split: its grader marks judge checks, or hidden checks run."""
    if hidden and exercise.hidden_grader_path.is_file():
        return True
    try:
        return bool(_MARKED.search(exercise.grader_path.read_text(encoding="utf-8")))
    except OSError:
        return False


def links() -> tuple[socket.socket, socket.socket]:
    """The judge's and the executor's ends of a new link."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def role(command: list[str], side: str) -> list[str]:
    """A grading command made one side of a split grading."""
    return [*command, "--course-role", side, "--course-link-fd", "{linkfd}"]


@dataclass
class JudgeRun:
    """The judge of one grading, running in a thread of the runner."""

    thread: threading.Thread | None = None
    result: ExerciseResult | None = None
    workdir: Path | None = None
    error: BaseException | None = field(default=None, repr=False)

    def wait(self, name: str) -> ExerciseResult:
        """The judge's verdict once it has ended (an error result if the judge itself broke)."""
        if self.thread is not None:
            self.thread.join()
        if self.workdir is not None:
            files.remove_folder(self.workdir)
        if self.result is None:
            return ExerciseResult(name=name, status="error", message=f"the judge process failed: {self.error!r}")
        return self.result


def start(exercise: Exercise, graded: Path, *, seed: int, hidden: bool, budget: Budget, link: socket.socket,
          env: dict[str, str], worker: isolation.Launcher | None, on_event: Callable[[dict], None] | None,
          cancel: threading.Event | None, place: str = "", watch: Callable[[int], str] | None = None,
          on_end: Callable[[int | None], None] | None = None, first_failure: bool = False,
          gate: Gate | None = None) -> JudgeRun:
    """Start the judge of one grading in a thread; `link` is its end of the link, given away here.

    One of several processes (`course.engine.parent.cohort`) has a judge each: `place` joins the judges to
    one another (`--course-process`), `watch` may end it (as the cohort's watch does its processes),
    and `on_end` hears its exit code. With `first_failure`, it stops at its first failing check, and
    so does the executor (`course.engine.child.roles`). With `gate`, it waits there as the executor does."""
    run = JudgeRun(workdir=Path(tempfile.mkdtemp(prefix="course-judge-")))
    report_path = run.workdir / "report" / f"{secrets.token_hex(16)}.json"
    report_path.parent.mkdir(mode=0o700)
    key = secrets.token_bytes(32)
    command = role(invocation.command(exercise, graded, run.workdir, report_path, seed, hidden,
                                      first_failure=first_failure), "judge")
    command += ["--course-process", place] if place else []
    fd = link.detach()

    def judge() -> None:
        """Run the judge's pytest and read its signed verdict."""
        code = None
        try:
            oom_before = limits.oom_kills()
            outcome = isolation.run_isolated(
                command, key=key, cwd=run.workdir, env=env, timeout_s=budget.cpu_s,
                wall_s=budget.wall_s + WALL_MARGIN_S, memory_mb=exercise.meta.memory_mb, launcher=worker,
                on_event=on_event, sandbox=protections.contained(), stack_path=report.stack_path(report_path),
                marker=report.output_marker(key), cancel=cancel, link=fd, watch=watch, light=True, gate=gate)
            code = outcome.returncode
            ours = outcome.cancelled or outcome.timed_out or bool(outcome.killed_for)
            if (code or 0) < 0 and not ours and not _complete(report_path, key):
                # The judge runs no learner code: a signal ends it only when memory ran out (the learner's
                # code may have used it all), when the learner's code could reach it (no PID namespace keeps
                # them apart), or when something is wrong with the machine.
                outcome.killed_for = limits.memory_kill(code, oom_before)
                if not outcome.killed_for:
                    run.result = _signalled(exercise, -(code or 0))
                    return
            run.result = verdict(exercise, report_path, key, outcome, graded)
            if code == 0 and not ours and run.result.stopped:
                # A judge that ended on its own wrote a whole report: an unfinished one was changed since.
                run.result.tampered, run.result.message = True, CHANGED
        except BaseException as exc:  # noqa: BLE001 - said as the platform's failure, never the learner's
            run.error = exc
        finally:
            if on_end is not None:
                on_end(code)

    run.thread = threading.Thread(target=judge, name=f"judge-{exercise.name}", daemon=True)
    run.thread.start()
    return run


def _signalled(exercise: Exercise, signum: int) -> ExerciseResult:
    """The verdict of a judge that a signal ended: the learner's doing where their code can reach it (no PID
    namespace on this machine: it is a process of their own user), else the machine's."""
    if protections.contained() is None:
        return ExerciseResult(name=exercise.name, status="failed", tampered=True, message=(
            f"the judge process was ended by signal {signum}, which your code can send it here; "
            "no check can be trusted, so none counts"))
    return ExerciseResult(name=exercise.name, status="error", message=(
        f"the judge process was ended by signal {signum}; this is a problem with the machine or the course, "
        "not your code"))


def _complete(report_path: Path, key: bytes) -> bool:
    """Whether the judge's signed report is whole (a judge that lingers, one of several, is ended after it)."""
    try:
        return bool(report.read_signed(report_path, key).get("complete"))
    except report.ReportError:
        return False


def merge(exercise: Exercise, executor: ExerciseResult, judge: ExerciseResult) -> ExerciseResult:
    """One verdict from both sides', its checks in the grader's order.

    Nothing a side failed to report is dropped: a check the other side's manifest names and this side
    did not report fails with this side's reason. Tampering on either side, a report removed or changed,
    or answers to the judge that the executor's report does not vouch for, void every check. A judge
    check whose executor went away takes the executor's reason (a limit, a crash) and the executor's
    checks, which never started, are not run."""
    order = _order(exercise)

    def position(check: CheckResult) -> int:
        return order.get(check.id.split("[")[0], len(order))

    if judge.heard > executor.served and not executor.tampered:
        executor.tampered, executor.message = True, UNVOUCHED
    spoiled = next((side for side in (executor, judge) if side.tampered), None)
    if spoiled is None:
        for side in (judge, executor):
            if side.status in (tree.CANCELLED, "error") and not side.checks:
                return side if side is judge or side.status == tree.CANCELLED else executor
    for side, other in ((executor, judge), (judge, executor)):
        side.checks += _unreported(side, other)
    if spoiled is not None:
        return _voided(executor, judge, spoiled.message, position)
    where, reason = _stop(executor, judge, position)
    merged = ExerciseResult(name=executor.name, status="failed", output=executor.output, seed=executor.seed,
                            ended_by=executor.ended_by)
    merged.checks = sorted([*executor.checks, *judge.checks], key=position)
    summarize(merged)
    if not merged.checks and merged.status != "error":  # an executor may have no checks, but not both sides
        merged.status = "error"
        merged.message = (f"the grader {exercise.grader_path.name} could not be collected: it defines no checks. "
                          "This is a problem with the course, not your code: run `course validate`.")
    if executor.status == "timeout" or (reason and merged.status != "error"):
        merged.status = executor.status if executor.status in ("timeout", "failed") else merged.status
        if reason and where is not None:
            merged.message = f'{reason.splitlines()[0]} (during "{where.title}")'
        else:
            merged.message = executor.message
    return merged


def _stop(executor: ExerciseResult, judge: ExerciseResult,
          position: Callable[[CheckResult], int]) -> tuple[CheckResult | None, str]:
    """Where the executor stopped, if a judge's check found it gone, and why: that check takes the reason, and
    every check after it that did not pass was not run."""
    # A grader may catch the executor's absence and say it in its own words: its text still carries GONE's.
    gone = [c for c in judge.checks if c.status != "passed" and report.GONE in c.message]
    reason = executor.stopped if gone else ""
    if not reason:
        return (gone[0] if gone else None), ""
    where = _stopped_in(executor, gone[0], reason, position)
    if where is gone[0]:
        gone[0].message = reason
    why = f'not run: the grading stopped during "{where.title}", before this check'
    for check in (*gone, *executor.checks):
        if position(check) > position(where) and check.status != "passed":
            check.status, check.score, check.message = NOT_RUN, 0.0, why
    return where, reason


def _unreported(side: ExerciseResult, other: ExerciseResult) -> list[CheckResult]:
    """The checks `other`'s manifest says `side` runs that `side` did not report (its manifest or report went
    missing, or it stopped before its manifest): failed for `side`'s reason, never left out."""
    have = {c.id for c in side.checks}
    reason = side.message if side.status != "passed" and side.message else UNREPORTED
    return [missing_check(c, reason) for c in other.elsewhere if isinstance(c.get("id"), str) and c["id"] not in have]


def _voided(executor: ExerciseResult, judge: ExerciseResult, reason: str,
            position: Callable[[CheckResult], int]) -> ExerciseResult:
    """Every check of both sides fails for one reason: the machinery, or what it wrote, was tampered with."""
    merged = ExerciseResult(name=executor.name, status="failed", output=executor.output, seed=executor.seed,
                            tampered=True, ended_by=executor.ended_by)
    for check in sorted([*executor.checks, *judge.checks], key=position):
        check.status, check.score, check.message = "failed", 0.0, reason
        merged.checks.append(check)
    summarize(merged)
    merged.status, merged.message = "failed", reason
    return merged


def _stopped_in(executor: ExerciseResult, first_gone: CheckResult, reason: str,
                position: Callable[[CheckResult], int]) -> CheckResult:
    """The check the stopped executor was in: its own check that carries the reason, if it came first (the
    sides take turns in the grader's order), else the judge's check it was answering."""
    own = next((c for c in executor.checks if c.status == "failed" and c.message == reason), None)
    return own if own is not None and position(own) < position(first_gone) else first_gone


def _order(exercise: Exercise) -> dict[str, int]:
    """Each check function's position in the grader (then the hidden grader), by name."""
    names: list[str] = []
    for path in (exercise.grader_path, exercise.hidden_grader_path):
        try:
            stat = path.stat()
        except OSError:
            continue
        names += _check_names(str(path), stat.st_mtime_ns, stat.st_size)
    return {name: i for i, name in enumerate(names)}


@functools.lru_cache(maxsize=64)
def _check_names(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The check functions of one grader file, in order; parsed once per version of the file (its time and size
    key the cache), not once per grading: a save in `course watch` should not wait for it."""
    try:
        tree = pyast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test"))


__all__ = ["JudgeRun", "links", "merge", "role", "start", "wanted"]
