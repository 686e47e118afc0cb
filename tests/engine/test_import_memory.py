"""What a check's import of the learner's file holds is let go when the check ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.runner import grade
from course.registry import load_course

TABLE_MB = 300
CHECKS = 6
GRADER = '''
"""Six checks of `double`; each prints the process's resident memory as the check ends."""
import psutil

KEPT = []  # the first check's function, kept for the others, as graders keep a jitted one (and its module)


def _resident(submission):
    KEPT.append(KEPT[0] if KEPT else submission.double)
    assert submission.double(3) == 6 and KEPT[0](4) == 8
    print("resident", psutil.Process().memory_info().rss // 2**20)

''' + "".join(f'''
def test_{i}(submission):
    """Check {i}."""
    _resident(submission)
''' for i in range(CHECKS))
LEARNER = f'''
import numpy as np

TABLE = np.ones({TABLE_MB} * 2**20 // 8)  # a table at module level, {TABLE_MB} MiB, every page touched


def double(x):
    return 2 * x
'''


@pytest.mark.slow
def test_a_table_at_module_level_is_held_once_whatever_the_number_of_checks(mini_course: Path) -> None:
    """Each check imports the file afresh; a large import is released before the next, so resident memory
    stays what it was at the second check (the first import, which the grader keeps a function of, and the
    current one), not a table more per check; the function the grader kept still works."""
    (mini_course / "graders/01_ex_pass/test_ex_pass.py").write_text(GRADER)
    exercise = load_course(mini_course).get("ex_pass")
    learner = mini_course / "exercises/01_ex_pass/ex_pass.py"
    learner.write_text(LEARNER)
    result = grade(exercise, learner, seed=1, skip_stub=False)
    assert result.status == "passed", result.message
    resident = [int(c.output.split()[-1]) for c in result.checks]
    assert len(resident) == CHECKS and resident[0] >= TABLE_MB
    assert resident[-1] - resident[1] < TABLE_MB / 2, resident


@pytest.mark.slow
def test_running_out_of_memory_names_a_large_import(mini_course: Path) -> None:
    """A grading stopped for its memory says how much the learner's file takes just to import, when that
    is large: what holds the memory, not only that there was too much."""
    (mini_course / "exercises/01_ex_pass/exercise.toml").write_text(
        'title = "ex_pass"\ntopic = "fixture"\ntimeout_s = 20\nmemory_mb = 700\n')
    exercise = load_course(mini_course).get("ex_pass")
    learner = mini_course / "exercises/01_ex_pass/ex_pass.py"
    learner.write_text(
        "import time\n\nimport numpy as np\n\nTABLE = np.ones(150 * 2**20 // 8)\n\n\n"
        "def double(x):\n    if x == 0:\n        more = np.ones(600 * 2**20 // 8)\n        time.sleep(60)\n"
        "    return 2 * x\n")
    result = grade(exercise, learner, seed=1, skip_stub=False)
    assert result.status == "failed" and "more than 700 MiB of memory" in result.message, result.message
    stopped = next(c for c in result.checks if c.id == "test_zero").message
    assert "Importing your file takes 15" in stopped and "MiB by itself" in stopped, stopped
