"""Progress you can trust: a line per student or grading when piped, a bar with elapsed and left on a terminal.

The time left comes from each exercise's measured gradings (`course.instructor.pace`); before
anything is measured the bar says that the first minute warms the reference solutions.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import TextColumn, TimeElapsedColumn

from class_helpers import SOLUTION, WRONG, class_course, write_folder
from course import ui
from course.instructor.pace import Pace
from course.ui import instructor

COURSE_BIN = Path(sys.executable).with_name("course")


def _env() -> dict[str, str]:
    """The environment of a real run, progress on."""
    return {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}


def test_time_left_is_each_exercises_measured_mean_times_what_is_left() -> None:
    """Slow exercises weigh as much as they cost; nothing measured means no estimate yet."""
    pace = Pace(Counter({"slow": 2, "fast": 4}), parallel=2)
    assert pace.left() is None and not pace.warm
    pace.measured("slow", 6.0, pending=False)  # a reference solution: a measure, not one of the class's
    pace.measured("fast", 1.0)
    assert pace.left() == pytest.approx((2 * 6.0 + 3 * 1.0) / 2)
    pace.measured("slow", 2.0)
    assert pace.left() == pytest.approx((1 * 4.0 + 3 * 1.0) / 2)


def test_the_bar_says_elapsed_and_left_and_what_the_first_minute_is_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal: the elapsed time, then the warm-up note until a grading is measured, then the time left."""
    monkeypatch.delenv("COURSE_NO_PROGRESS", raising=False)
    monkeypatch.setattr(ui, "err", Console(file=io.StringIO(), force_terminal=True, width=160))
    pace = Pace(Counter({"ex": 3}), parallel=1)
    watch = instructor.Watch("grading", 3, pace)
    assert watch.mode == "bar"
    with watch:
        columns = watch._progress.columns  # noqa: SLF001 - what the bar is made of
        left = next(c for c in columns if isinstance(c, instructor._LeftColumn))  # noqa: SLF001
        assert any(isinstance(c, TimeElapsedColumn) for c in columns)
        assert any(isinstance(c, TextColumn) and "elapsed" in c.text_format for c in columns)
        assert "first minute" in left.render(None).plain and "reference solutions" in left.render(None).plain
        pace.measured("ex", 65.0)
        assert left.render(None).plain == "about 2:10 left"


def test_grade_piped_prints_a_line_per_student(tmp_path: Path) -> None:
    """Not on a terminal, `course grade` logs the warm-up and one line per student with elapsed and left."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION})
    write_folder(subs / "bob", {"ex_pass.py": WRONG})
    write_folder(subs / "carol", {"notes.txt": "nothing"})
    done = subprocess.run([str(COURSE_BIN), "grade", str(subs), "--out", str(tmp_path / "out"), "--course",
                           str(course), "--only", "ex_pass", "--trust-submissions"], capture_output=True, text=True,
                          env=_env(), timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any("warming" in line and "reference solution" in line for line in lines), done.stderr
    graded = [line for line in lines if re.match(r"\[\d/3\] ", line)]
    assert graded[0].startswith("[1/3] carol: 0/8")  # nothing to grade: done first
    assert {line.split()[1] for line in graded[1:]} == {"alice:", "bob:"}
    assert all("elapsed" in line for line in graded) and "left" in graded[-1]


def test_validate_piped_prints_a_line_per_grading_and_check_stays_quiet(tmp_path: Path) -> None:
    """`course validate` logs each grading when piped; `course check` piped prints no progress at all."""
    course = class_course(tmp_path)
    done = subprocess.run([str(COURSE_BIN), "validate", "ex_fail", "--course", str(course)], capture_output=True,
                          text=True, env=_env(), timeout=300, check=False)
    graded = [line for line in done.stderr.splitlines() if re.match(r"\[\d/\d\] ex_fail: ", line)]
    assert len(graded) == 4, done.stderr  # the stub, the solution and two wrong variants
    checked = subprocess.run([str(COURSE_BIN), "check", "ex_fail", "--course", str(course)], capture_output=True,
                             text=True, env=_env(), cwd=course, timeout=300, check=False)
    assert not re.search(r"\[\d+/\d+\]|elapsed", checked.stderr), checked.stderr
