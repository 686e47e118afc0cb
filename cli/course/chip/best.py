"""The best time `course bench` measured of each call, kept in the workspace beside the progress file.

`.course/bench.json` holds, per exercise, per chip and per call, the fastest median a bench ever
measured of the learner's kernel with its values right (a time the roofline refuses, or wrong
values, is never kept), with XLA's time of the same run, the clock it was read on and when. It is
feedback, not a grade: it is not signed, and a damaged file is simply started again.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from course.files import write_atomic
from course.paths import WorkspacePaths

__all__ = ["load", "record"]


def load(paths: WorkspacePaths) -> dict[str, Any]:
    """The kept bests: {exercise: {chip: {call: best}}} (empty when missing or damaged)."""
    try:
        data = json.loads(paths.bench.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(paths: WorkspacePaths, name: str, chip: str, calls: list[dict[str, Any]]) -> list[str]:
    """Keep each timed call's median where it beats the kept one; returns the calls that set a new best."""
    from filelock import FileLock

    improved: list[str] = []
    paths.state.mkdir(parents=True, exist_ok=True)
    with FileLock(str(paths.progress_lock)):
        data = load(paths)
        kept = data.setdefault(name, {}).setdefault(chip, {})
        for call in calls:
            if call.get("status") != "timed":
                continue
            median = float(call["kernel"]["median_s"])
            old = kept.get(call["call"])
            if isinstance(old, dict) and float(old.get("median_s", float("inf"))) <= median:
                continue
            kept[call["call"]] = {"median_s": median, "xla_median_s": float(call["xla"]["median_s"]),
                                  "clock": call["kernel"]["clock"], "when": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                          time.gmtime())}
            improved.append(call["call"])
        with contextlib.suppress(OSError):  # a read-only workspace keeps nothing, and says nothing of it
            write_atomic(paths.bench, json.dumps(data, indent=1))
    return improved
