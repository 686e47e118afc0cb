"""From a grading process's signed report to a verdict: the result types and the rules that decide them.

A pass needs a manifest and a complete report, both signed with the key the parent sent, with
every expected check present and passed. Anything else is a failure with a sentence saying what
probably happened, or, when the grader itself is at fault, an error. A run stopped at a limit, or
one that ended before the end, keeps the verdicts of the checks its signed report holds; the
check it was in fails, saying why (and, when stopped, where the learner's code was); the checks
after it were not run (NOT_RUN: no points, never a pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from course.engine.contain import limits
from course.engine.parent.isolation import Outcome
from course.engine.parent.verdict_text import (
    _no_start_message,
    _removed_message,
    _report_message,
    _stop_reason,
    tampered_message,
)
from course.engine.wire import report
from course.engine.wire.report import RUNNING
from course.registry import Exercise

CHECK_STATUSES = ("passed", "failed", "error", "skipped")
"""What a grading process may say of a check; NOT_RUN is the parent's own word."""
UNREPORTED = "this check did not report a result"
NOT_RUN = "not_run"
"""A check that never started: the run was stopped, or ended, in an earlier one. It scores nothing."""
STACK_READ_LIMIT = 1 << 20


@dataclass(frozen=True)
class CheckEvent:
    """A check of an exercise has started (RUNNING) or ended, as the grading process says while it runs:
    for display only. A running check's `cpu_s` is the CPU time it has used so far, of `budget_s`.

    The verdict is decided from the signed report at the end; an event may be wrong or missing.
    """

    exercise: str
    id: str
    title: str
    status: str
    cpu_s: float = 0.0
    budget_s: float = 0.0

    @classmethod
    def parse(cls, exercise: str, raw: dict) -> CheckEvent | None:
        """The event in one raw line from the grading process, or None if it is not one."""
        fields = [raw.get(k) for k in ("id", "title", "status")]
        if not all(isinstance(f, str) for f in fields) or fields[2] not in (*CHECK_STATUSES, RUNNING):
            return None
        return cls(exercise, *(str(f)[:500] for f in fields))


@dataclass
class CheckResult:
    """One check's verdict as the learner sees it."""

    id: str
    title: str
    status: str
    score: float
    max_score: float
    message: str = ""
    hidden: bool = False
    """A check of the hidden grader, run only when instructors grade."""
    output: str = ""
    """What the learner's code printed during this check (cut to a few KiB, marked where cut); in
    `--json` as "output", left out when it printed nothing."""


@dataclass
class ExerciseResult:
    """One exercise's verdict: passed, failed, timeout (the learner's), error (ours), or not_tried
    (no file, or still the stub: nothing was graded)."""

    name: str
    status: str
    score: float = 0.0
    max_score: float = 0.0
    duration_s: float = 0.0
    message: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    seed: int = 0
    output: str = ""
    not_tried: bool = False
    tampered: bool = False
    """The grading machinery reported tampering: every check failed for that one reason."""
    stopped: str = ""
    """Why the grading stopped before its report was whole ('' when it was): a limit, a crash."""
    ended_by: int = 0
    """The signal that ended the grading process when no limit of the grading stopped it (0 otherwise):
    the learner's code, or the platform stopping the job, whose grading is no verdict."""
    elsewhere: list[dict] = field(default_factory=list)
    """One side of a split grading: the checks its manifest says the other side runs (id, title, max_score)."""
    served: int = 0
    """An executor: how many answers to its judge its last signed report vouches for."""
    heard: int = 0
    """A judge: how many answers from its executor its last signed report says it received."""

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return self.status == "passed"

    def to_json(self) -> dict[str, object]:
        """The exercise object of the `--json` report (SPEC §4)."""
        return {
            "name": self.name,
            "status": self.status,
            "score": self.score,
            "max_score": self.max_score,
            "duration_s": round(self.duration_s, 3),
            "message": self.message,
            "checks": [
                {
                    "id": c.id,
                    "title": c.title,
                    "status": c.status,
                    "score": c.score,
                    "max_score": c.max_score,
                    "message": c.message,
                    **({"output": c.output} if c.output else {}),
                    **({"hidden": True} if c.hidden else {}),
                }
                for c in self.checks
            ],
        }


def verdict(exercise: Exercise, report_path: Path, key: bytes, outcome: Outcome, submission: Path | None = None,
            source: str | None = None, *, split: bool = False) -> ExerciseResult:
    """Decide the result from the signed manifest and report, and how the process ended.

    `submission` (the path the grading loaded) and its `source` let a stopped run say where it was.
    `split`: this is the executor of a split grading, which may have no checks of its own when every
    check is the judge's (a grader with no checks at all is still found out, by the merge).
    """
    base = ExerciseResult(name=exercise.name, status="failed", output=outcome.output)
    manifest, problem = _read(report.manifest_path(report_path), key)
    stopped = outcome.timed_out or bool(outcome.killed_for)
    if manifest is None and problem != "missing":
        return _tampered(base, None, _report_message(problem, outcome))
    if manifest is None and (outcome.checks_began or report_path.exists() and report_path.stat().st_size):
        # The manifest was written before any learner code ran, and is gone now: the learner's code
        # (or a process it started) removed what the grading writes.
        return _tampered(base, None, _removed_message())
    if manifest is None and stopped:
        status = "timeout" if outcome.timed_out else "failed"
        return _all_failed(base, None, _stop_reason(exercise, outcome, []), status)
    if manifest is None:
        base.status, base.message = "error", _no_start_message(outcome)
        return base
    base.elsewhere = [c for c in manifest.get("elsewhere", []) if isinstance(c, dict)]
    if manifest["collect_errors"] or not (manifest["checks"] or split):
        base.status = "error"
        base.message = (
            f"the grader {exercise.grader_path.name} could not be collected: "
            f"{'; '.join(manifest['collect_errors']) or 'it defines no checks'}. "
            "This is a problem with the course, not your code: run `course validate`."
        )
        return base
    final, problem = _read(report_path, key)
    if final is not None:
        base.served, base.heard = _count(final, "served"), _count(final, "heard")
    if final is not None and final.get("tampered"):
        return _tampered(base, manifest, tampered_message(final["tampered"]))
    if final is not None and final.get("complete"):
        return _from_report(base, manifest, final, outcome)
    if problem == "missing":
        # A first report is written before the manifest: one that is gone or empty now was removed or
        # emptied while the learner's code ran, and may have said that the machinery was tampered with.
        return _tampered(base, manifest, _removed_message())
    if stopped:  # an unreadable report here may be one the kill cut short: it earns nothing either way
        frames = limits.learner_frames(_stack(report_path), submission, source)
        return _unfinished(base, manifest, final, outcome, _stop_reason(exercise, outcome, frames))
    if final is not None:
        return _unfinished(base, manifest, final, outcome, _report_message("missing", outcome))
    return _tampered(base, manifest, _report_message(problem, outcome))


def _count(final: dict, name: str) -> int:
    """A count the signed report holds (0 when it holds none)."""
    value = final.get(name, 0)
    return value if type(value) is int and value >= 0 else 0


def _read(path: Path, key: bytes) -> tuple[dict | None, str]:
    """A signed file's payload and '', or None and what is wrong with it."""
    try:
        return report.read_signed(path, key), ""
    except report.ReportError as exc:
        return None, str(exc)


def _stack(report_path: Path) -> str:
    """The stacks the stopped run wrote, or ''."""
    try:
        with report.stack_path(report_path).open("rb") as fh:
            return fh.read(STACK_READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _checks(manifest: dict, final: dict | None, outcome: Outcome) -> list[CheckResult]:
    """The checks the signed report holds, in the manifest's order, each with what it printed."""
    by_id = {c.get("id"): c for c in (final or {}).get("checks", []) if isinstance(c, dict)}
    found = []
    for position, expected in enumerate(manifest["checks"]):
        raw = by_id.get(expected["id"])
        if raw is None or raw.get("status") not in CHECK_STATUSES:
            break
        status, max_score = str(raw["status"]), float(expected["max_score"])
        found.append(CheckResult(expected["id"], expected["title"], status, max_score if status == "passed" else 0.0,
                                 max_score, str(raw.get("message", "")), bool(expected.get("hidden", False)),
                                 outcome.checks_output.get(position, "")))
    return found


def _from_report(base: ExerciseResult, manifest: dict, final: dict, outcome: Outcome) -> ExerciseResult:
    """Build checks from a complete, verified report; an expected check missing from it fails."""
    base.checks = _checks(manifest, final, outcome)
    for expected in manifest["checks"][len(base.checks):]:
        base.checks.append(_failed_check(expected, UNREPORTED))
    return summarize(base)


def _unfinished(base: ExerciseResult, manifest: dict, final: dict | None, outcome: Outcome,
                reason: str) -> ExerciseResult:
    """A run that ended inside a check: the checks before it keep their verdicts, it fails for
    `reason`, and the ones after it were not run."""
    base.checks, base.stopped = _checks(manifest, final, outcome), reason
    rest = manifest["checks"][len(base.checks):]
    if rest:
        why = f'not run: the grading stopped during "{rest[0]["title"]}", before this check'
        base.checks.append(_failed_check(rest[0], reason, outcome.checks_output.get(len(base.checks), "")))
        base.checks += [_failed_check(c, why, status=NOT_RUN) for c in rest[1:]]
    summarize(base)
    if base.status != "error":
        base.status = "timeout" if outcome.timed_out else "failed"
        first = reason.split("\n", 1)[0]
        base.message = f'{first} (during "{rest[0]["title"]}")' if rest else first
    return base


def _failed_check(expected: dict, reason: str, output: str = "", status: str = "failed") -> CheckResult:
    """A check from the manifest that did not pass for `reason` (failed, or not run)."""
    return CheckResult(expected["id"], expected["title"], status, 0.0, float(expected["max_score"]), reason,
                       hidden=bool(expected.get("hidden", False)), output=output)


def summarize(result: ExerciseResult) -> ExerciseResult:
    """Set the exercise's status, score and message from its checks (a check not run is never a pass)."""
    result.score = sum(c.score for c in result.checks)
    result.max_score = sum(c.max_score for c in result.checks)
    n_ok = sum(c.status in ("passed", "skipped") for c in result.checks)
    if any(c.status == "error" for c in result.checks):
        result.status = "error"
        result.message = "the grader itself failed; this is a problem with the course: run `course validate`"
    elif n_ok == len(result.checks):
        result.status, result.message = "passed", f"all {n_ok} checks passed"
    else:
        result.status, result.message = "failed", f"{n_ok} of {len(result.checks)} checks passed"
    return result


def _all_failed(base: ExerciseResult, manifest: dict | None, reason: str, status: str) -> ExerciseResult:
    """Every expected check fails for one reason that ended the whole run."""
    for expected in (manifest or {}).get("checks", []):
        base.checks.append(_failed_check(expected, reason))
    base.max_score = sum(c.max_score for c in base.checks)
    base.status, base.message = status, reason
    return base


def _tampered(base: ExerciseResult, manifest: dict | None, reason: str) -> ExerciseResult:
    """Every expected check fails: the machinery, or what it wrote, was tampered with (no check counts)."""
    base.tampered = True
    return _all_failed(base, manifest, reason, "failed")


def missing_check(expected: dict, reason: str, status: str = "failed") -> CheckResult:
    """A check named in a manifest that has no verdict of its own: failed (or not run) for `reason`."""
    return _failed_check(expected, reason, status=status)
