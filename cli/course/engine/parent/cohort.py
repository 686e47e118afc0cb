"""Grade one exercise in several processes that run its grader together (`processes = N`), and merge their verdicts.

Each process is a whole grading, as `course.engine.parent.runner` makes one: its own work folder, signing
key, signed report, limits and sandbox, plus `--course-process I/N@127.0.0.1:PORT` so that it joins
the others through `jax.distributed` before the learner's file is imported (`course.engine.common.peers`).
In a sandbox they share a private loopback: one namespace whose `lo` only they can reach
(`course.engine.contain.sandbox`). A `Watch` (`course.engine.parent.lockstep`) follows every process through the
steps it announces; it ends them all once each has reported, or when they stop moving while in
different steps (a hang: one waits in a collective the other never entered), naming where each was.
Every report is verified on its own with its own key; a check passes only if it passed in every process.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from course import files
from course.engine.contain import limits, sandbox
from course.engine.contain.protections import Confinement
from course.engine.contain.sandbox import SandboxError
from course.engine.parent import invocation, isolation, judging, tree
from course.engine.parent.isolation import Launcher, Outcome
from course.engine.parent.lockstep import RANK, Watch
from course.engine.parent.stopwatch import Stopwatch
from course.engine.parent.verdict import CheckEvent, CheckResult, ExerciseResult, summarize, verdict
from course.engine.wire import report
from course.registry import Exercise

HOLDER_START_S = 10.0
_NOISE = re.compile(r"^\[Gloo\] Rank \d+ is connected to .*\n?", re.MULTILINE)
_COUNT_MESSAGE = re.compile(r"^\d+ of \d+ checks passed$")


@dataclass
class _Process:
    """One grading process of the cohort: where it works and how it signs."""

    index: int
    workdir: Path
    report_path: Path
    key: bytes
    outcome: Outcome | None = None
    judged: judging.JudgeRun | None = None
    """This process's judge, in a split grading (`course.engine.parent.judging`)."""
    error: BaseException | None = None
    """What the thread running this process raised, to raise again in the caller's."""


def grade(exercise: Exercise, submission: Path, *, seed: int, worker: Launcher | None, cache_dir: Path | None,
          on_event: Callable[[CheckEvent], None] | None, hidden: bool, sandbox: Confinement | None,
          read_only_cache: bool, cancel: threading.Event | None,
          deadline: limits.Deadline | None = None) -> ExerciseResult:
    """Grade `submission` in `exercise.meta.processes` processes at once; one result
    (`course.engine.parent.runner.grade` says what each keyword does)."""
    started = time.monotonic()
    procs = [_new_process(i) for i in range(exercise.meta.processes)]
    watch = Watch(len(procs), invocation.events_for(exercise.name, on_event))
    # Split, each process has a judge; the judges join one another as the processes do, and are watched alike.
    judges = Watch(len(procs), watch.forward) if judging.wanted(exercise, hidden) else None
    options = {"worker": worker, "cache_dir": cache_dir, "hidden": hidden, "sandbox": sandbox,
               "read_only_cache": read_only_cache, "cancel": cancel, "deadline": deadline, "judges": judges}
    try:
        address = f"127.0.0.1:{_free_port()}"
        if judges is not None:
            judges.address = f"127.0.0.1:{_free_port()}"
    except OSError as exc:
        return _no_port(exercise, seed, exc)
    try:
        try:
            with _private_loopback(sandbox) as holder:
                threads = [threading.Thread(target=_run, args=(p, exercise, submission, seed, address, holder, watch),
                                            kwargs=options, daemon=True) for p in procs]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        except SandboxError as exc:
            return _sandbox_failed(exercise, seed, exc)
        raised = next((p.error for p in procs if p.error is not None), None)
        if raised is not None:
            raise raised
        if any(p.outcome is None or p.outcome.cancelled for p in procs):
            return invocation.cancelled(exercise.name, seed)
        source = invocation.source_text(submission)
        results = [verdict(exercise, p.report_path, p.key, p.outcome, submission.resolve(), source,
                           split=p.judged is not None) for p in procs if p.outcome is not None]
        results = [judging.merge(exercise, r, p.judged.wait(exercise.name)) if p.judged is not None else r
                   for p, r in zip(procs, results, strict=True)]
    finally:
        for p in procs:
            if p.judged is not None:
                p.judged.wait(exercise.name)
            files.remove_folder(p.workdir)
    result = merge(exercise.name, results)
    result.seed, result.duration_s = seed, time.monotonic() - started
    return result


def _sandbox_failed(exercise: Exercise, seed: int, exc: SandboxError) -> ExerciseResult:
    """The result of a grading whose processes could not be given their private loopback: the machine's fault."""
    return ExerciseResult(name=exercise.name, status="error", max_score=exercise.max_score or 0.0, seed=seed,
                          message=f"{exc}; this is a problem with this machine's sandbox, not the submitted code "
                                  "(`COURSE_PORTABLE=1` grades without the sandbox)")


def _no_port(exercise: Exercise, seed: int, exc: OSError) -> ExerciseResult:
    """The result of a grading whose processes cannot meet: this machine gives no TCP port on its loopback (a
    sandbox without IP, gVisor's, say). The platform cannot grade the exercise here; no process was started."""
    why = exc.strerror or str(exc)
    return ExerciseResult(name=exercise.name, status="error", max_score=exercise.max_score or 0.0, seed=seed,
                          message=f"this exercise's {exercise.meta.processes} processes meet over TCP on this "
                                  f"machine's loopback, and the operating system gives no TCP socket here ({why}), "
                                  "so it cannot be graded on this machine; that is no mistake of your code")


def _new_process(index: int) -> _Process:
    """A work folder, a private report folder and a key for process `index`."""
    workdir = Path(tempfile.mkdtemp(prefix=f"course-grade-p{index}-"))
    report_path = workdir / "report" / f"{secrets.token_hex(16)}.json"
    report_path.parent.mkdir(mode=0o700)
    return _Process(index, workdir, report_path, secrets.token_bytes(32))


def _run(proc: _Process, exercise: Exercise, submission: Path, seed: int, address: str, holder: int,
         watch: Watch, *, worker: Launcher | None, cache_dir: Path | None, hidden: bool,
         sandbox: Confinement | None, read_only_cache: bool, cancel: threading.Event | None,
         deadline: limits.Deadline | None, judges: Watch | None) -> None:
    """Run one process of the cohort to its end (on its own thread), and tell `watch` it ended."""
    own = judges is not None and hidden and sandbox is not None  # hidden checks stay with the judges
    policy = invocation.policy(sandbox, proc.workdir, exercise, submission, own_graders=own)
    graded, folder = invocation.hand_over(policy, proc.workdir, exercise, submission, own_graders=own)
    folder = folder or (invocation.graders_link(proc.workdir, exercise) if sandbox else None)
    command = invocation.command(exercise, graded, proc.workdir, proc.report_path, seed,
                                 hidden and judges is None, folder)
    budget = limits.budget(exercise.meta)
    checks = Stopwatch(exercise.name, budget)  # one check's own CPU limit, in each process as in one grading
    env = invocation.environment(exercise, cache_dir, read_only_cache)
    link = None
    if judges is not None:
        theirs, link = judging.links()
        i = proc.index
        proc.judged = judging.start(exercise, graded.resolve(), seed=seed, hidden=hidden, budget=budget, link=theirs,
                                  env=env, worker=worker, on_event=lambda raw: _both(checks, judges.event, i, raw),
                                  cancel=cancel,
                                  place=f"{i}/{watch.count}@{judges.address}", watch=lambda pid: judges(i, pid),
                                  on_end=lambda code: judges.end(i, code))
        command = judging.role(command, "executor")
    oom_before = limits.oom_kills()
    try:
        proc.outcome = isolation.run_isolated(
            [*command, "--course-process", f"{proc.index}/{watch.count}@{address}"],
            key=proc.key, cwd=proc.workdir, env=env, link=link.detach() if link is not None else None,
            timeout_s=budget.cpu_s, wall_s=budget.wall_s, memory_mb=exercise.meta.memory_mb, launcher=worker,
            on_event=lambda raw: _both(checks, watch.event, proc.index, raw),
            sandbox=policy.on_loopback(holder) if policy is not None else None,
            stack_path=report.stack_path(proc.report_path), marker=report.output_marker(proc.key),
            cancel=cancel,
            watch=lambda pid: (deadline.watch(pid) if deadline else "") or _partner(judges, proc.index, pid)
            or checks.watch(pid) or watch(proc.index, pid),
        )
        outcome = proc.outcome
        if not (outcome.cancelled or outcome.timed_out or outcome.killed_for):  # a memory kill says memory
            outcome.killed_for = limits.memory_kill(outcome.returncode, oom_before)
        if checks.stopped is not None and not outcome.cancelled:  # stopped at one check's own limit: a timeout
            outcome.timed_out, outcome.limit, outcome.killed_for = True, "check", ""
    except BaseException as exc:  # raised again on the caller's thread
        proc.error = exc
    finally:
        watch.end(proc.index, proc.outcome.returncode if proc.outcome else None)


def _both(checks: Stopwatch, step: Callable[[int, dict], None], index: int, raw: dict) -> None:
    """One event of process `index` for its stopwatch (its check's CPU limit) and for the cohort's watch."""
    checks.raw_event(raw)
    step(index, raw)


def _partner(judges: Watch | None, index: int, pid: int) -> str:
    """Note the executor `pid` of process `index` as its judge's partner: its CPU time is the judge's progress."""
    if judges is not None:
        judges.partners[index] = pid
    return ""


@contextlib.contextmanager
def _private_loopback(confinement: Confinement | None) -> Iterator[int]:
    """The pid of a process holding a namespace with only a loopback, for sandboxed processes to join; 0
    when not sandboxed or the machine has no namespaces (`docs/security.md` says what that weakens)."""
    if confinement is None or not confinement.protections.network_namespace:
        yield 0
        return
    user = confinement.protections.user  # a root `course`'s gradings run as this user: so does their namespace
    holder = tree.start_helper([sys.executable, "-I", "-S", sandbox.__file__, "--hold",
                                     *(str(n) for n in user or ())], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True, env={})
    try:
        assert holder.stdout is not None and holder.stdin is not None
        ready, _, _ = select.select([holder.stdout], [], [], HOLDER_START_S)
        if not ready or holder.stdout.readline() != b"ready\n":
            raise SandboxError("the private loopback for the grading processes could not be made")
        yield holder.pid
    finally:
        with contextlib.suppress(OSError):
            holder.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            holder.wait(timeout=2)
        holder.kill()
        holder.wait()
        tree.forget_helper(holder.pid)


def _free_port() -> int:
    """A TCP port free on the loopback now, for process 0's coordinator."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def merge(name: str, results: list[ExerciseResult]) -> ExerciseResult:
    """One verdict from every process's: a check passes only where it passed in all of them, and a
    failure says which process it was in."""
    broken = next((r for r in results if r.status == "error" or r.tampered or not r.checks), None)
    if broken is not None:
        return _labelled(broken, results.index(broken), results)
    merged = ExerciseResult(name=name, status="failed", output=_outputs([r.output for r in results]))
    for position, first in enumerate(results[0].checks):
        picks = [(i, r.checks[position]) for i, r in enumerate(results) if position < len(r.checks)]
        index, worst = min(picks, key=lambda p: (RANK.get(p[1].status, 0), p[0]))
        merged.checks.append(CheckResult(
            first.id, first.title, worst.status, worst.score if len(picks) == len(results) else 0.0,
            first.max_score, f"process {index}: {worst.message}" if worst.status != "passed" else "",
            first.hidden, _outputs([c.output for _, c in picks])))
    summarize(merged)  # score, status and message from the merged checks, as for one process
    stopped = next(((i, r) for i, r in enumerate(results) if r.status != "passed"
                    and not _COUNT_MESSAGE.match(r.message)), None)
    if stopped is not None and merged.status != "passed":
        merged.status, merged.message = stopped[1].status, f"process {stopped[0]}: {stopped[1].message}"
    return merged


def _labelled(result: ExerciseResult, index: int, results: list[ExerciseResult]) -> ExerciseResult:
    """`result`, the verdict of process `index`, as the whole cohort's: its messages say which process."""
    result.message = f"process {index}: {result.message}"
    for check in result.checks:
        if check.status != "passed":
            check.message = f"process {index}: {check.message}"
    result.output = _outputs([r.output for r in results])
    return result


def _outputs(texts: list[str]) -> str:
    """What each process printed, under its number (JAX's own connection lines left out)."""
    parts = [(i, _NOISE.sub("", t)) for i, t in enumerate(texts)]
    shown = [(i, t) for i, t in parts if t.strip()]
    if len(shown) <= 1 and len(texts) == 1:
        return shown[0][1] if shown else ""
    return "".join(f"[process {i}]\n{t}{'' if t.endswith(os.linesep) else os.linesep}" for i, t in shown)
