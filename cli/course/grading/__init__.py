"""`course.grading`: the helpers graders use; submodules import JAX lazily, on first use.

Instructors read `docs/authoring.md` for an example of each helper. The names below are
re-exported here so a grader can write `from course.grading import assert_array_equal`.
"""

from __future__ import annotations

import importlib
from typing import Any

from course.grading.feedback import CheckFailed, check, fail

__all__ = ["SUBMODULES", "CheckFailed", "check", "fail"]

# Searched in this order for a name not defined here; each lists its public names in `__all__`.
SUBMODULES = ("arrays", "donation", "compiles", "executions", "kernels", "dataflow", "aliasing", "tpu",
              "patching", "source", "memory", "sharding", "collectives", "steps", "refs", "properties", "named")


def __getattr__(name: str) -> Any:
    """Import the submodule that defines `name` the first time it is asked for."""
    for sub in SUBMODULES:
        try:
            module = importlib.import_module(f"course.grading.{sub}")
        except ModuleNotFoundError as exc:
            if exc.name != f"course.grading.{sub}":
                raise
            continue
        if name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module 'course.grading' has no attribute {name!r}")
