"""How a grader says a rule was broken, in the course's words; free of JAX so the plugin stays light."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["CheckFailed", "check", "fail"]


class CheckFailed(AssertionError):
    """A check's verdict: the learner broke the rule named in the message.

    The plugin shows the message as it is, without pytest's assertion rewriting noise.
    """


def fail(message: str) -> NoReturn:
    """Fail the current check with a message written for the learner."""
    raise CheckFailed(message)


def check(condition: object, message: str) -> None:
    """Fail the current check with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)
