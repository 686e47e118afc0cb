"""Which of a session's exercises go to the chip, in which mode, and what is kept of what it said.

After `course check`, on a machine with a TPU, every graded exercise that has a `[chip]` table and
a file that was tried (passed or failed, not stopped) is compiled and compared on the chip, one
file at a time. `course bench` times the exercises' `bench` calls on the chip, or estimates them
for a named generation where there is none, and keeps each best time in the workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from course.chip import best, stage
from course.chip.presence import tpu_here
from course.errors import UsageError

if TYPE_CHECKING:
    from course.engine.parent.verdict import ExerciseResult
    from course.registry import Exercise
    from course.session import Session

__all__ = ["after_check", "bench", "bench_targets"]


def after_check(session: Session, graded: list[ExerciseResult], *, here: bool = False,
                on_start: Callable[[str, int, int], None] | None = None) -> dict[str, stage.ChipReport]:
    """The chip's report of each graded exercise that goes to the chip (none without a TPU); `here`: in this
    process, which holds the chip (a notebook's)."""
    if not (here or tpu_here()):
        return {}
    chosen = [r for r in graded if not r.not_tried and r.status in ("passed", "failed")
              and stage.calls_of(session.exercise(r.name), "check")]
    reports = {}
    for i, result in enumerate(chosen):
        if on_start is not None:
            on_start(result.name, i, len(chosen))
        exercise = session.exercise(result.name)
        reports[result.name] = stage.run(exercise, session.submission(exercise), "check", here=here)
    return reports


def bench_targets(session: Session, name: str | None) -> list[Exercise]:
    """The exercises `course bench` times: the one named, or every one with `bench` calls whose file was tried."""
    if name is not None:
        exercise = session.exercise(name)
        if not stage.calls_of(exercise, "bench"):
            timed = ", ".join(e.name for e in session.course.exercises if stage.calls_of(e, "bench"))
            raise UsageError(f"`{exercise.name}` has no kernel to time; `course bench` times {timed}.")
        return [exercise]
    return [e for e in session.course.exercises if stage.calls_of(e, "bench") and not session.is_stub_now(e)]


def bench(session: Session, exercise: Exercise, *, tpu: str, here: bool = False) -> tuple[stage.ChipReport, list[str]]:
    """Time one exercise on the chip (or estimate it for `tpu` without one); the calls that set a new best.
    `here`: in this process, which holds the chip (a notebook's)."""
    if session.is_stub_now(exercise) or not session.submission(exercise).is_file():
        report = stage.ChipReport(exercise.name, "bench")
        report.error = f"your file of {exercise.name} is still the stub: write your kernel, then time it"
        return report, []
    if not (here or tpu_here()):
        return stage.run(exercise, session.submission(exercise), "estimate", tpu=tpu), []
    report = stage.run(exercise, session.submission(exercise), "bench", here=here)
    return report, best.record(session.paths, exercise.name, report.chip, report.calls)
