"""The learner's file is imported once per grading, and what a check's own import holds is let go."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.parent.runner import grade
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
    """The checks share one import, so resident memory stays what it was at the second check, not a table
    more per check; the function the grader kept still works."""
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


SLEEP_S = 2
COUNTED = f'''
import pathlib
import time

with open(pathlib.Path(__file__).with_name("imports.log"), "a") as log:  # one line per import
    log.write("imported\\n")
time.sleep({SLEEP_S})  # a slow import, paid once per grading


def double(x):
    return 2 * x
'''
SHARED_CHECKS = 6
COUNTING_GRADER = '''
"""Six checks of the shared module, then one that asks for a module of its own."""
SEEN = []


''' + "".join(f'''
def test_shared_{i}(submission):
    """Shared check {i}."""
    SEEN.append(submission)
    assert submission.double(3) == 6 and SEEN[0] is submission
''' for i in range(SHARED_CHECKS)) + '''

def test_fresh(fresh_submission, submission):
    """A check with its own module."""
    assert fresh_submission is not submission and fresh_submission.double(4) == 8
    assert SEEN[0] is submission
'''


@pytest.mark.slow
def test_the_file_is_imported_once_per_grading_whatever_the_number_of_checks(mini_course: Path) -> None:
    """A file with a `time.sleep` at import, graded by seven checks, is imported twice: once for the six
    checks that share it, once more for the check that asks for a module of its own."""
    (mini_course / "graders/01_ex_pass/test_ex_pass.py").write_text(COUNTING_GRADER)
    exercise = load_course(mini_course).get("ex_pass")
    learner = mini_course / "exercises/01_ex_pass/ex_pass.py"
    learner.write_text(COUNTED)
    result = grade(exercise, learner, seed=1, skip_stub=False)
    assert result.status == "passed", [(c.id, c.message) for c in result.checks]
    assert len(result.checks) == SHARED_CHECKS + 1
    assert learner.with_name("imports.log").read_text().splitlines() == ["imported"] * 2


@pytest.mark.slow
def test_an_import_that_fails_fails_every_check_with_its_traceback(mini_course: Path) -> None:
    """The one shared import raises: every check fails with the learner's line, not only the first."""
    (mini_course / "graders/01_ex_pass/test_ex_pass.py").write_text(COUNTING_GRADER)
    exercise = load_course(mini_course).get("ex_pass")
    learner = mini_course / "exercises/01_ex_pass/ex_pass.py"
    learner.write_text("def double(x):\n    return 2 * x\n\nraise ValueError('not ready')\n")
    result = grade(exercise, learner, seed=1, skip_stub=False)
    assert result.status == "failed" and len(result.checks) == SHARED_CHECKS + 1
    for c in result.checks:
        assert c.status == "failed" and "ValueError: not ready" in c.message and "line 4" in c.message, c
