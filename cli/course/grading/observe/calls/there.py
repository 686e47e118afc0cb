"""A grader's own observation made where the learner's code runs: the judge receives only what it returns.

Some observations need the learner's objects inside a program of the grader's (a `jax.jit` that
creates, writes and freezes the learner's ref, say), which cannot be built across two processes.
`@in_executor` marks such a grader function: its first argument is the learner's module. Called
in a judge check with the module as the judge sees it, the function runs in the executor, on the
module imported there, and what it returns (arrays and plain values) comes back for the judge to
compare; a `fail` inside it fails the check with its message, which can only cost the learner
points. Outside a split grading it is an ordinary call.

What it returns is reported by the learner's process, as every call's result is: a file can forge
it only by handing back the values a correct program gives for the judge's inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["in_executor", "registered"]

F = TypeVar("F", bound=Callable[..., Any])

_REGISTERED: dict[str, Callable[..., Any]] = {}
"""The marked functions of the graders this process imported, by `module:qualname`."""


def in_executor(fn: F) -> F:
    """Mark `fn(submission, *args)` as an observation made where the learner's code runs (module docstring)."""
    key = f"{fn.__module__}:{fn.__qualname__}"
    _REGISTERED[key] = fn

    @functools.wraps(fn)
    def observe(submission: Any, *args: Any) -> Any:
        # Only the judge's view of the module has the method, on its class: a learner's module that defines a
        # name `observation` is still called here, as any module is.
        if getattr(type(submission), "observation", None) is None:
            return fn(submission, *args)
        return submission.observation(key, *args)

    return observe  # type: ignore[return-value]


def registered(key: str) -> Callable[..., Any] | None:
    """The marked function `key` names, as the executor finds it in the grader it imported; None if there is none."""
    return _REGISTERED.get(key)
