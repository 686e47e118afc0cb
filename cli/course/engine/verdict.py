"""From a grading process's signed report to a verdict: the result types and the rules that decide them.

A pass needs a manifest and a report, both signed with the key the parent sent, with every
expected check present and passed. Anything else is a failure with a sentence saying what
probably happened, or, when the grader itself is at fault, an error.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from course.engine import report
from course.engine.isolation import Outcome
from course.registry import Exercise

CHECK_STATUSES = ("passed", "failed", "error", "skipped")


@dataclass(frozen=True)
class CheckEvent:
    """A check of an exercise has ended, as the grading process says while it runs: for display only.

    The verdict is decided from the signed report at the end; an event may be wrong or missing.
    """

    exercise: str
    id: str
    title: str
    status: str

    @classmethod
    def parse(cls, exercise: str, raw: dict) -> CheckEvent | None:
        """The event in one raw line from the grading process, or None if it is not one."""
        fields = [raw.get(k) for k in ("id", "title", "status")]
        if not all(isinstance(f, str) for f in fields) or fields[2] not in CHECK_STATUSES:
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


@dataclass
class ExerciseResult:
    """One exercise's verdict: passed, failed, timeout (the learner's) or error (ours)."""

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
                    **({"hidden": True} if c.hidden else {}),
                }
                for c in self.checks
            ],
        }


def verdict(exercise: Exercise, report_path: Path, key: bytes, outcome: Outcome) -> ExerciseResult:
    """Decide the result from the signed manifest and report, and how the process ended."""
    base = ExerciseResult(name=exercise.name, status="failed", output=outcome.output)
    manifest, problem = None, "missing"
    try:
        manifest = report.read_signed(report.manifest_path(report_path), key)
    except report.ReportError as exc:
        problem = str(exc)
    if outcome.timed_out or outcome.killed_for:
        reason = _limit_message(exercise, outcome)
        return _all_failed(base, manifest, reason, "timeout" if outcome.timed_out else "failed")
    if manifest is None and problem != "missing":
        return _all_failed(base, None, _report_message(problem, outcome), "failed")
    if manifest is None and report_path.exists() and report_path.stat().st_size:
        # A report but no manifest: the grader ran, and the manifest was removed while learner
        # code ran. That is the learner's doing, not a platform failure.
        return _all_failed(base, None, _report_message("forged", outcome), "failed")
    if manifest is None:
        base.status, base.message = "error", _no_start_message(outcome)
        return base
    if manifest["collect_errors"] or not manifest["checks"]:
        base.status = "error"
        base.message = (
            f"the grader {exercise.grader_path.name} could not be collected: "
            f"{'; '.join(manifest['collect_errors']) or 'it defines no checks'}. "
            "This is a problem with the course, not your code: run `course validate`."
        )
        return base
    try:
        final = report.read_signed(report_path, key)
    except report.ReportError as exc:
        return _all_failed(base, manifest, _report_message(str(exc), outcome), "failed")
    if final.get("tampered"):
        base.tampered = True
        return _all_failed(base, manifest, tampered_message(final["tampered"]), "failed")
    return _from_report(base, manifest, final)


def _from_report(base: ExerciseResult, manifest: dict, final: dict) -> ExerciseResult:
    """Build checks from a verified report; an expected check missing from it fails."""
    by_id = {c.get("id"): c for c in final.get("checks", []) if isinstance(c, dict)}
    for expected in manifest["checks"]:
        raw = by_id.get(expected["id"])
        if raw is None or raw.get("status") not in CHECK_STATUSES:
            base.checks.append(_failed_check(expected, "this check did not report a result"))
            continue
        max_score = float(expected["max_score"])
        status = str(raw["status"])
        base.checks.append(
            CheckResult(
                id=expected["id"],
                title=expected["title"],
                status=status,
                score=max_score if status == "passed" else 0.0,
                max_score=max_score,
                message=str(raw.get("message", "")),
                hidden=bool(expected.get("hidden", False)),
            )
        )
    return _summarize(base)


def _failed_check(expected: dict, reason: str) -> CheckResult:
    """A check from the manifest that failed for `reason`."""
    return CheckResult(expected["id"], expected["title"], "failed", 0.0, float(expected["max_score"]), reason,
                       hidden=bool(expected.get("hidden", False)))


def _summarize(result: ExerciseResult) -> ExerciseResult:
    """Set the exercise's status, score and message from its checks."""
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


def _limit_message(exercise: Exercise, outcome: Outcome) -> str:
    """Plain words for a run the parent had to stop."""
    if outcome.timed_out:
        return (
            f"your code ran past the {exercise.meta.timeout_s:g} s limit and was stopped; "
            "is there a loop that never ends, or a wait that never returns?"
        )
    return outcome.killed_for


def tampered_message(what: list[str]) -> str:
    """What the notary saw done to the grading machinery, in one sentence."""
    seen = "; ".join(dict.fromkeys(str(w) for w in what[:3]))
    return f"the grading machinery was tampered with: {seen}. No check can be trusted, so none counts"


def _report_message(problem: str, outcome: Outcome) -> str:
    """Explain a missing or untrustworthy report in terms of what the learner's code probably did."""
    if problem == "forged":
        return (
            "the grading report was altered or forged, so the grading machinery was tampered with and "
            "no check can be trusted; did your code write files it should not?"
        )
    if problem == "unreadable":
        return ("the grading report was damaged, so the grading machinery was tampered with and no check can "
                "be trusted; did your code write files it should not?")
    code = outcome.returncode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        return (
            f"the grading process was killed by {name} before reporting; "
            "did your code crash Python or kill its own process?"
        )
    return (
        "the grading process ended before reporting; does your code call `sys.exit` or `os._exit`, "
        "or close its standard output?"
    )


def _no_start_message(outcome: Outcome) -> str:
    """The grader never reached its checks: the platform's failure."""
    tail = outcome.output.strip().splitlines()[-3:]
    detail = f" Last output: {' | '.join(tail)}" if tail else ""
    return (
        f"the grading process failed to start (exit code {outcome.returncode}); this is a problem "
        f"with the installation, not your code: reinstall with `pip install -e .`.{detail}"
    )
