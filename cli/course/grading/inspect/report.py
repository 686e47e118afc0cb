"""What an observation says when the observed code raised: whose fault, which line, in one sentence.

An exception whose traceback passes through the learner's file is theirs (their code raised, or
JAX refused what it traced); any other is the inspection's own failure, which the platform reports
as its problem, never as the learner's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from course.grading.inspect.calls import Call, CallError
from course.grading.judge.source import describe_exception, learner_frames, learner_location

__all__ = ["describe_error", "each_call", "guarded", "source_lines"]


def describe_error(exc: BaseException, path: Path | None) -> dict[str, Any]:
    """{"message", "where", "line", "yours", "not_started"} for an exception met while observing."""
    cause = exc.__cause__ if exc.__cause__ is not None and type(exc).__name__ == "CallError" else None
    shown = cause if cause is not None else exc
    frames = learner_frames(shown.__traceback__, path)
    where = learner_location(shown.__traceback__, path).removeprefix(" at ")
    if cause is not None:
        message = f"{exc} {describe_exception(cause)}"
    elif type(exc).__name__ == "CallError":
        message = str(exc)
    else:
        message = describe_exception(exc)
    return {
        "message": message,
        "where": where,
        "line": frames[-1].lineno if frames else None,
        "yours": bool(frames),
        "not_started": isinstance(shown, NotImplementedError) and bool(frames),
    }


def guarded(fn: Callable[[], dict[str, Any]], path: Path | None) -> dict[str, Any]:
    """`fn()`, or {"error": ...} when it raised (a learner's `sys.exit` included)."""
    try:
        return fn()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the learner's code raised is reported
        return {"error": describe_error(exc, path)}


def each_call(calls: list[Call | CallError], path: Path | None,
              one: Callable[[Call, Path | None], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call's report, `one(call, path)`, guarded; a call that could not be made says why."""
    out = []
    for call in calls:
        if isinstance(call, CallError):
            out.append({"call": "", "error": describe_error(call, path)})
        else:
            out.append({"call": call.text, **guarded(lambda call=call: one(call, path), path)})
    return out


def source_lines(path: Path | None, lines: set[int]) -> dict[str, str]:
    """{"12": "x = x_ref[...]"} for each of the learner's `lines`, as the graded text has them."""
    import linecache

    if path is None:
        return {}
    found = {}
    for n in sorted(lines):
        text = linecache.getline(str(path), n).strip()
        if text:
            found[str(n)] = text
    return found
