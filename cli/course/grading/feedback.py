"""How a grader says a rule was broken, in the course's words; free of JAX so the plugin stays light."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["CheckFailed", "check", "fail"]


class CheckFailed(AssertionError):
    """A check's verdict: the learner broke the rule named in the message.

    The plugin shows the message as it is, without pytest's assertion rewriting noise.
    """


class PlatformFailure(Exception):  # noqa: N818 - named for what it is, as CheckFailed is
    """The course's own machinery failed during a check (it could not send, read or compile what crossed between
    the processes of a grading): an error of the platform, never the learner's mistake. The engine raises it,
    and helpers that meet a limit of the grading; graders do not (so it is not among the helpers listed)."""


def fail(message: str) -> NoReturn:
    """Fail the current check with a message written for the learner."""
    raise CheckFailed(message)


def check(condition: object, message: str) -> None:
    """Fail the current check with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)
