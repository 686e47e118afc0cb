"""Grade one exercise in a fresh, isolated pytest process and turn its signed report into a result.

The runner knows nothing of the terminal or of progress: it returns `ExerciseResult`s. The
verdict comes only from the report the plugin signs with a key sent through a pipe; the child's
exit code and output are never the verdict.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from course import limits, report
from course.limits import Launcher, Outcome
from course.registry import Exercise

if TYPE_CHECKING:
    from course.worker import Worker

CHECK_STATUSES = ("passed", "failed", "error", "skipped")
CACHE_MAX_BYTES = 256 * 2**20


@dataclass
class CheckResult:
    """One check's verdict as the learner sees it."""

    id: str
    title: str
    status: str
    score: float
    max_score: float
    message: str = ""


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
                }
                for c in self.checks
            ],
        }


def grade(
    exercise: Exercise,
    submission: Path,
    *,
    seed: int | None = None,
    worker: Launcher | None = None,
    cache_dir: Path | None = None,
) -> ExerciseResult:
    """Grade `submission` against `exercise`'s grader in a fresh process (forked by `worker` if given).

    With `cache_dir`, XLA executables are kept there between gradings (see `base_environment`).
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
        report_path = workdir / f"{secrets.token_hex(16)}.json"
        key = secrets.token_bytes(32)
        outcome = limits.run_isolated(
            _command(exercise, submission, report_path, seed),
            key=key,
            cwd=workdir,
            env=_environment(exercise, cache_dir),
            timeout_s=exercise.meta.timeout_s,
            memory_mb=exercise.meta.memory_mb,
            launcher=worker,
        )
        result = verdict(exercise, report_path, key, outcome)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result.seed, result.duration_s = seed, time.monotonic() - started
    return result


def _command(exercise: Exercise, submission: Path, report_path: Path, seed: int) -> list[str]:
    """The pytest command line; `{keyfd}` is filled in by the launcher."""
    ini = report_path.parent / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        sys.executable,
        "-I",
        "-m",
        "pytest",
        str(exercise.grader_path),
        "-p",
        "course.plugin",
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
        str(report_path.parent),
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
        "--course-hard-exit",
    ]


def _environment(exercise: Exercise, cache_dir: Path | None) -> dict[str, str]:
    """A small, clean environment: CPU JAX with the device count the grader needs."""
    devices = f"--xla_force_host_platform_device_count={exercise.meta.devices}"
    return {**base_environment(cache_dir), "XLA_FLAGS": devices}


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
            # Inherited by every descendant: lets the sweep recognise an escaped one.
            "COURSE_GRADING": "1",
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
        names = ", ".join(final["tampered"][:3])
        reason = f"your code replaced part of the grading machinery ({names}), so no check can be trusted"
        return _all_failed(base, manifest, reason, "failed")
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
            )
        )
    return _summarize(base)


def _failed_check(expected: dict, reason: str) -> CheckResult:
    """A check from the manifest that failed for `reason`."""
    return CheckResult(expected["id"], expected["title"], "failed", 0.0, float(expected["max_score"]), reason)


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


def _report_message(problem: str, outcome: Outcome) -> str:
    """Explain a missing or untrustworthy report in terms of what the learner's code probably did."""
    if problem == "forged":
        return (
            "the grading report was altered or forged, so it cannot be trusted; "
            "did your code write files it should not?"
        )
    if problem == "unreadable":
        return "the grading report was damaged, so it cannot be trusted; did your code write files it should not?"
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


def grade_many(
    items: Iterable[tuple[Exercise, Path]],
    *,
    jobs: int = 1,
    seed: int | None = None,
    on_result: Callable[[ExerciseResult], None] | None = None,
    worker: Launcher | None = None,
    cache_dir: Path | None = None,
) -> list[ExerciseResult]:
    """Grade several exercises, `jobs` at a time; results come back in the order given."""
    pairs = list(items)

    def one(pair: tuple[Exercise, Path]) -> ExerciseResult:
        result = grade(pair[0], pair[1], seed=seed, worker=worker, cache_dir=cache_dir)
        if on_result is not None:
            on_result(result)
        return result

    if jobs <= 1 or len(pairs) <= 1:
        return [one(p) for p in pairs]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, pairs))


def start_worker(cache_dir: Path | None = None) -> Worker:
    """A warm worker for gradings that follow one another (watch, several exercises); close it after.

    JAX reads its settings when imported, so the worker gets the same `cache_dir` as its gradings.
    """
    from course.worker import Worker

    return Worker(base_environment(cache_dir))
