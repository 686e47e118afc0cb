"""What a grading says about itself: the course and its version, JAX's version, the seed, when, and the isolation."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from course.engine.contain.protections import Protections
from course.progress import now_iso
from course.registry import Course


def version(package: str) -> str:
    """An installed package's version, without importing it."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def commit(root: Path) -> str:
    """The course's git commit (short), or '' when it is not a checkout."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def grading_context(course: Course, *, student: str, seed: int, protections: Protections) -> dict[str, Any]:
    """The `extra_data` of a results file that is about the grading, not the student's work."""
    return {
        "course": course.meta.title,
        "student": student,
        "jax_version": version("jax"),
        "course_version": version("course"),
        "course_commit": commit(course.root),
        "seed": seed,
        "graded_at": now_iso(),
        "isolation": protections.as_dict(),
    }
