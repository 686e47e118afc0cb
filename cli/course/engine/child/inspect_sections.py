"""The check an inspection run makes once per section: observe the learner's code, write it down, sign its digest.

Collected from this file by path in the grading process, like a grader, with the learner's module
from the plugin's `fresh_submission` fixture, imported again for each section (so one section's
compiles never count in another's). The observers are imported with this file, before learner code runs,
so replacing one of them is tampering, as replacing a grader's helper is.
"""

from __future__ import annotations

import time
import types
from pathlib import Path
from typing import Any

from course.engine.child.inspector import Observed
from course.engine.wire.observation import write_observation
from course.grading.inspect import load_observers, observe_section
from course.grading.judge.source import describe_exception

load_observers()  # at collection, before any learner code: the guard's snapshot then holds them


def test_section(fresh_submission: types.ModuleType, submission_path: Path, inspect_section: dict[str, Any],
                 inspect_out: Path) -> None:
    """What your code does, seen as the graders see it."""
    started = time.monotonic()
    try:
        report = observe_section(inspect_section, fresh_submission, submission_path)
    except Exception as exc:  # noqa: BLE001 - the observers catch the learner's exceptions; this one is ours
        report = {"show": inspect_section["show"], "note": inspect_section.get("note", ""), "calls": [],
                  "error": {"message": f"the inspection itself failed ({describe_exception(exc)}); this is a "
                                       "problem with the course, not your code", "yours": False, "platform": True}}
    report["seconds"] = round(time.monotonic() - started, 3)
    raise Observed(write_observation(inspect_out, inspect_section, report))
