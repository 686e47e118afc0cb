"""The sentences a verdict gives when a grading did not end as it should: stopped, tampered with, unreported."""

from __future__ import annotations

import signal

from course.engine.contain import limits
from course.engine.parent.isolation import Outcome
from course.registry import Exercise


def _stop_reason(exercise: Exercise, outcome: Outcome, frames: list[limits.Frame]) -> str:
    """Plain words for a run the parent had to stop, with where the learner's code was."""
    if outcome.timed_out:
        return limits.reason(outcome.limit, limits.budget(exercise.meta), frames)
    return outcome.killed_for + limits.where(frames)


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


def _removed_message() -> str:
    """The grading's own files were removed or changed while the learner's code ran."""
    return ("the grading's report was removed or changed while your code ran, so no check can be trusted; "
            "does your code (or a process it starts) delete or write files outside its own folder?")


def _no_start_message(outcome: Outcome) -> str:
    """The grader never reached its checks: the platform's failure."""
    tail = outcome.output.strip().splitlines()[-3:]
    detail = f" Last output: {' | '.join(tail)}" if tail else ""
    return (
        f"the grading process failed to start (exit code {outcome.returncode}); this is a problem of the "
        f"grading platform on this machine, not of your code.{detail}"
    )
