"""Typed errors that the command layer turns into one sentence and an exit code."""

from __future__ import annotations


class CourseError(Exception):
    """A problem the learner or instructor can fix; its message is one sentence saying what to do."""

    exit_code = 2


class UsageError(CourseError):
    """A command was called wrongly: an unknown exercise, a bad option, a missing workspace."""


class UnknownExercise(UsageError):
    """A name that is not in `course.toml`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"There is no exercise named `{name}`; `course list` shows the names.")
        self.name = name


class RegistryError(CourseError):
    """`course.toml` or an `exercise.toml` is missing or invalid."""


class PlatformError(CourseError):
    """The platform itself failed (a grader crashed, a report was missing): not the learner's doing."""

    exit_code = 3
