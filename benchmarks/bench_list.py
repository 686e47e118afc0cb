"""SPEC §8: `course list` wall time against `python -c "import rich, typer"` (goal: at most 1.25x, and
the same cost with 25 exercises as with 3).

Measured as a learner runs it: inside a workspace made by `course init`, with progress recorded
for every exercise (a signed entry each), in the real course and in two synthetic courses of 3
and 25 exercises made from the real ones' files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import COURSE, ROOT, interleaved, report

GOAL = 1.25


def synthetic_course(size: int) -> Path:
    """A course of `size` exercises, each a renamed copy of one of the real course's, in turn."""
    from course.registry import load_course

    real = load_course(ROOT).exercises
    target = Path(tempfile.mkdtemp(prefix=f"bench-course-{size}-"))
    names = [f"copy_{i:02d}_{real[i % len(real)].name}"[:40] for i in range(size)]
    for i, name in enumerate(names, start=1):
        source = real[(i - 1) % len(real)]
        folder = f"{i:02d}_{name}"
        shutil.copytree(source.lesson_path.parent, target / "exercises" / folder)
        (target / "exercises" / folder / f"{source.name}.py").rename(target / "exercises" / folder / f"{name}.py")
        graders = target / "graders" / folder
        graders.mkdir(parents=True)
        shutil.copy(source.grader_path, graders / f"test_{name}.py")
    (target / "course.toml").write_text(f'format_version = 1\ntitle = "Synthetic"\nexercises = {json.dumps(names)}\n')
    return target


def workspace_with_progress(course: Path) -> Path:
    """A fresh workspace of `course` in which every exercise has a recorded result."""
    from course.engine.parent.verdict import ExerciseResult
    from course.session import Session

    target = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    subprocess.run([*COURSE, "--course", str(course), "init", str(target)], check=True, capture_output=True)
    session = Session.open(course, target)
    results = [ExerciseResult(e.name, "passed" if e.position % 2 else "failed", score=1.0, max_score=2.0)
               for e in session.course.exercises]
    session.record(session.course.exercises, results)
    return target


def main() -> None:
    """Measure `course list` in the real course and in courses of 3 and 25, interleaved with the baseline."""
    baseline = [sys.executable, "-c", "import rich, typer"]
    places = {"the course": ROOT, "3 exercises": synthetic_course(3), "25 exercises": synthetic_course(25)}
    for label, course in places.items():
        workspace = workspace_with_progress(course)
        medians = interleaved({"list": [*COURSE, "list"], "baseline": baseline}, cwd=workspace)
        report(f"course list ({label}) vs import rich, typer", medians["list"], medians["baseline"], GOAL)


if __name__ == "__main__":
    main()
