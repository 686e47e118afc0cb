"""Inspect one learner's file in the isolated grading process of `course check`, and read back what it observed.

The run is a grading in every respect the learner's code can meet: the same command line, plugin,
notary, environment, limits and launcher (`course.engine.parent.runner`, `course.engine.parent.isolation`), with
the platform's inspection checks (`course.engine.child.inspect_sections`) in place of the exercise's
graders. Its verdict is read by `course.engine.parent.verdict` from the signed report; each section's
signed message names the file the section wrote and that file's SHA-256, and an observation is
shown only when the file still matches (`course.engine.child.inspector`).
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.engine.contain import limits, protections
from course.engine.parent import isolation, runner
from course.engine.parent.isolation import Launcher
from course.engine.parent.verdict import ExerciseResult, verdict
from course.engine.wire import report
from course.engine.wire.observation import read_observation
from course.registry import Exercise

SECTIONS = str(Path(__file__).parents[1] / "child" / "inspect_sections.py")
"""The platform's inspection checks, collected by path in the grading process (never imported here)."""
ALTERED = ("the record of this section was changed while your code ran, so it cannot be shown; "
           "does your code write files?")


@dataclass
class Inspection:
    """What an inspection of one file found: a report per section, or why there is none."""

    name: str
    status: str
    """`inspected`; `failed` (the file could not be inspected: not tried, an import error, tampering);
    `timeout`; or `error` (the platform's own failure)."""
    message: str = ""
    sections: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    output: str = ""
    not_tried: bool = False
    processes: int = 1
    """How many processes grade this exercise together; an inspection always runs in one."""
    devices: int = 1
    """CPU devices in each process, in grading as in the inspection."""

    def errors(self) -> list[dict[str, Any]]:
        """Every error a call met, in section order (the learner's and the inspection's own)."""
        found = [s["error"] for s in self.sections if s.get("error")]
        for section in self.sections:
            found += [c["error"] for c in section.get("calls", []) if c.get("error")]
        return found

    @property
    def exit_code(self) -> int:
        """0 when every call was observed; 1 when the learner's code got in the way; 3 for the platform."""
        if self.status == "error" or any(e.get("platform") for e in self.errors()):
            return 3
        return 0 if self.status == "inspected" and not self.errors() else 1

    def to_json(self) -> dict[str, Any]:
        """The exercise part of `course inspect --json`."""
        return {"name": self.name, "status": self.status, "message": self.message,
                "duration_s": round(self.duration_s, 3), "processes": self.processes, "devices": self.devices,
                "sections": self.sections}


def inspect(exercise: Exercise, submission: Path, sections: list[dict[str, Any]], *,
            cache_dir: Path | None = None, worker: Launcher | None = None) -> Inspection:
    """Observe `submission` section by section (`sections` as `course.inspection.sections_of` makes them)."""
    if not submission.is_file():
        return Inspection(exercise.name, "failed", not_tried=True,
                          message=f"not tried: {submission} does not exist; `course reset {exercise.name}` "
                                  "restores the stub")
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="course-inspect-"))
    try:
        report_path = workdir / "report" / f"{secrets.token_hex(16)}.json"
        report_path.parent.mkdir(mode=0o700)
        out = workdir / "observed"
        out.mkdir(mode=0o700)
        spec = workdir / "inspect.json"
        spec.write_text(json.dumps({"sections": sections}), encoding="utf-8")
        key = secrets.token_bytes(32)
        budget = limits.budget(exercise.meta)  # CPU seconds and a wall-clock cap, as in a grading
        # No tracebacks: every section "fails" with its observation's digest, which is all the parent reads.
        options = ["-p", "course.engine.child.inspector", "--course-inspect", str(spec),
                   "--course-inspect-out", str(out), "--tb=no"]
        command = runner.command_for(exercise, submission, workdir, report_path, 0,
                                     tests=[SECTIONS], options=options)
        outcome = isolation.run_isolated(command, key=key, cwd=workdir,
                                         env=runner.grading_environment(exercise, cache_dir),
                                         timeout_s=budget.cpu_s, wall_s=budget.wall_s,
                                         memory_mb=exercise.meta.memory_mb, launcher=worker,
                                         stack_path=report.stack_path(report_path),
                                         sandbox=protections.contained())  # its processes end with it
        source = submission.read_text(encoding="utf-8", errors="replace")  # where a stopped run was
        result = verdict(exercise, report_path, key, outcome, submission.resolve(), source)
        found = _read(exercise, result, out, sections)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    found.duration_s, found.output = time.monotonic() - started, outcome.output
    found.processes, found.devices = exercise.meta.processes, exercise.meta.devices
    return found


def _read(exercise: Exercise, result: ExerciseResult, out: Path, sections: list[dict[str, Any]]) -> Inspection:
    """The inspection behind a verified verdict: each section's observation, or why it is missing."""
    if result.status == "error":
        return Inspection(exercise.name, "error", message=result.message.replace(
            f"the grader {exercise.grader_path.name}", "the inspection"))
    if result.status == "timeout" or result.tampered or not result.checks:
        return Inspection(exercise.name, "failed" if result.status != "timeout" else "timeout", message=result.message)
    found, reasons = [], []
    for spec, check in zip(sections, result.checks, strict=False):
        try:
            report = read_observation(out, check.message)
        except ValueError:
            report, reason = None, check.message or "this section did not report"
        else:
            reason = ALTERED if report is None else ""
        reasons.append(reason)
        found.append(report if report is not None else {"show": spec["show"], "note": spec.get("note", ""),
                                                        "calls": [], "error": {"message": reason, "yours": True}})
    if all(reasons) and len(set(reasons)) == 1:  # one cause behind every section: the import, most likely
        return Inspection(exercise.name, "failed", message=reasons[0].replace("so no check can run",
                                                                              "so nothing can be inspected"))
    return Inspection(exercise.name, "inspected", sections=found)
