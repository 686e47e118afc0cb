"""`course release OUT`: the students' copy of the course, with no `solutions/` and no `hidden/` checks.

It holds what a learner needs to set up and work through the course: `course.toml`, a README
written for students (`course.instructor.readme`: set-up, the learner's tour, the notebook
workflow), `pyproject.toml`, the docs that are not the instructors' (authoring, grading and the
security notes stay behind), each listed exercise (the stub as the course shipped it), each
public grader with its data files, and the package itself. It is made a git repository with one
commit where git is installed, ready to push as a template (GitHub Classroom) or to hand out;
`course reset` there restores stubs from that commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import course
from course.errors import UsageError
from course.files import write_atomic
from course.instructor import state
from course.paths import STATE_DIR
from course.registry import COURSE_FILE, Course, Exercise
from course.stubs import LOCK, handed_out

TOP_FILES = ("README.md", "pyproject.toml", "LICENSE", "LICENSE.md", ".gitignore")
INSTRUCTOR_DOCS = {"authoring.md", "grading.md", "security.md"}
"""Docs written for instructors (how to write a grader, grade a class, what grading guards against)."""
NEVER = {"__pycache__", STATE_DIR, "hidden", ".pytest_cache", ".ruff_cache", ".DS_Store"}
"""Names left out wherever they are: caches, state, and hidden checks."""


def _tree(folder: Path, *, hidden: bool = False) -> Iterator[Path]:
    """Every file under `folder`, minus the names in NEVER (but `hidden/` if asked) and egg-info folders."""
    never = NEVER - {"hidden"} if hidden else NEVER
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in never and not d.endswith(".egg-info"))
        for name in sorted(names):
            path = Path(root) / name
            if name not in NEVER and not name.endswith(".pyc") and path.is_file() and not path.is_symlink():
                yield path


def _package_source(root: Path) -> tuple[Path, Path]:
    """(folder to copy, where it goes in the release): the course's `cli/` if it has one, else the installed package."""
    if (root / "cli" / "course" / "__init__.py").is_file():
        return root / "cli", Path("cli")
    return Path(course.__file__).resolve().parent, Path("cli", "course")


def files(found: Course, *, hidden: bool = False) -> dict[Path, Path | bytes]:
    """What the release holds: its relative path -> a file to copy, or the bytes to write (pristine stubs,
    the students' README).

    With `hidden`, the graders keep their hidden checks and the course keeps its own README and docs
    (an autograder bundle, never for students).
    """
    root = found.root
    # The students' copy leaves the grading seed out; a bundle has it written in (`state.course_toml`).
    plan: dict[Path, Path | bytes] = {Path(COURSE_FILE): state.course_toml(found, seeded=hidden)}
    plan.update({Path(name): root / name for name in TOP_FILES if (root / name).is_file()})
    if (root / "docs").is_dir():
        plan.update({p.relative_to(root): p for p in _tree(root / "docs")
                     if hidden or p.relative_to(root / "docs").as_posix() not in INSTRUCTOR_DOCS})
    for exercise in found.exercises:
        plan.update({p.relative_to(root): p for p in _tree(exercise.lesson_path.parent)})
        plan.update({p.relative_to(root): p for p in _tree(exercise.grader_path.parent, hidden=hidden)})
        plan[exercise.stub_rel] = _stub(exercise)
    if (root / LOCK).is_file():
        plan[LOCK] = root / LOCK
    source, dest = _package_source(root)
    plan.update({dest / p.relative_to(source): p for p in _tree(source)})
    if not hidden and (root / "README.md").is_file():
        plan[Path("README.md")] = _readme(found, plan)
    return plan


def _stub(exercise: Exercise) -> bytes:
    """The stub as the course hands it out; a stub changed without being recorded stops the release."""
    stub = handed_out(exercise)
    if stub is None:
        raise UsageError(f"{exercise.stub_rel.as_posix()} is not the stub {LOCK.as_posix()} records, and no commit "
                         "holds that stub; restore it, or record the new one with "
                         f"`course validate {exercise.name} --record-stubs`.")
    return stub


def _readme(found: Course, plan: dict[Path, Path | bytes]) -> bytes:
    """The students' README, made from the course's."""
    from course.instructor.context import version
    from course.instructor.readme import student_readme

    present = {p.as_posix() for p in plan}
    text = (found.root / "README.md").read_text(encoding="utf-8")
    return student_readme(text, found.meta.title, version("jax"), present).encode()


def release(found: Course, out: Path, *, git: bool = True) -> list[Path]:
    """Write the students' copy to `out` (which must be new or empty); return the files written."""
    out = out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} already exists and is not an empty folder; give `course release` a new folder.")
    if out == found.root or found.root in out.parents and out.parts[len(found.root.parts)] in (
            "exercises", "graders", "solutions", "cli", "docs"):
        raise UsageError(f"{out} is inside the course's own folders; give `course release` a folder outside them.")
    written = []
    for rel, source in files(found).items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            write_atomic(dest, source)
        else:
            shutil.copy2(source, dest)
        written.append(dest)
    if git:
        _commit(out)
    return written


def _commit(out: Path) -> None:
    """Make `out` a git repository with one commit, where git is installed (quietly skipped elsewhere)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "course release", "GIT_AUTHOR_EMAIL": "course@localhost",
           "GIT_COMMITTER_NAME": "course release", "GIT_COMMITTER_EMAIL": "course@localhost"}
    steps = (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "The course, as released to students"])
    try:
        for args in steps:
            subprocess.run(["git", "-C", str(out), *args], check=True, capture_output=True, env=env, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return
