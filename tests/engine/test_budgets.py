"""Each exercise's check budget names an endless loop quickly and leaves every correct solution far from it.

The budgets (`check_timeout_s`) are held against the CPU seconds the checks were measured to need by
`benchmarks/bench_check_cpu.py`, recorded in `benchmarks/check_cpu.json`: nothing is timed here. A loop
must be named within `limits.LOOP_NAMED_WITHIN_S` of CPU time, the stopwatch's overshoot included; the
reference's slowest check must fit HEADROOM_REFERENCE times in the budget, the slowest check of any
alternative correct solution HEADROOM_ALTERNATIVES times and of any known-wrong variant (which must reach
the check it fails) HEADROOM_WRONG times, and no budget is below FLOOR_S (docs/authoring.md, section 3,
says why these).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from course.engine.contain import limits
from course.engine.parent import stopwatch
from course.registry import Exercise, load_course

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "benchmarks" / "check_cpu.json"
HEADROOM_REFERENCE = 3.0
"""The reference's slowest check fits this many times in its budget. The needs were measured on a loaded
machine (a load of about 20 on 2 cores), which already inflates them about twice over a quiet one: on top of
that, a learner's correct code may be slower than ours, and their machine slower than the one measured."""
HEADROOM_ALTERNATIVES = 2.5
"""The slowest check of any alternative correct solution fits this many times: they already are the slower
correct styles, so a smaller margin is left on top of them."""
HEADROOM_WRONG = 1.5
"""The slowest check of any known-wrong variant fits this many times: it must reach the check it fails rather
than a limit before it, but a mistake that ends in a timeout is still no pass."""
FLOOR_S = 4.0
"""No budget is smaller, however light the checks: below it, noise no measure sees weighs as much as the work."""
COURSE = load_course(REPO)
MEASURE = "`BENCH_ONLY={name} BENCH_ALTERNATIVES=1 BENCH_WRONG=1 BENCH_WRITE=1 python benchmarks/bench_check_cpu.py`"


def _figures(exercise: Exercise) -> dict:
    """The needs recorded for `exercise`; a failure saying how to measure them when there are none."""
    found = json.loads(RECORD.read_text(encoding="utf-8"))["exercises"].get(exercise.name)
    if found is None or not {"reference_s", "alternatives_s", "wrong_s"} <= set(found):
        pytest.fail(f"{exercise.name}: no measured needs in {RECORD.name}; run {MEASURE.format(name=exercise.name)}")
    return found


@pytest.mark.parametrize("exercise", COURSE.exercises, ids=lambda e: e.name)
def test_the_record_measured_the_graders_checks(exercise: Exercise) -> None:
    """The needs recorded are those of the grader's checks as they are now: a check added or renamed since is
    measured again before its budget is trusted."""
    tree = ast.parse(exercise.grader_path.read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
    measured = {c.split("[")[0] for c in _figures(exercise)["checks"]}
    assert measured == names, f"{exercise.name}: measured {sorted(measured)}, the grader has {sorted(names)}; " \
                              f"run {MEASURE.format(name=exercise.name)}"


@pytest.mark.parametrize("exercise", COURSE.exercises, ids=lambda e: e.name)
def test_a_loop_is_named_in_time_and_a_correct_check_never_near_its_budget(exercise: Exercise) -> None:
    """The budget is a limit of its own, small enough that a loop is named within the promise, and large enough
    for the measured checks with their headroom."""
    budget = limits.budget(exercise.meta).check_cpu_s
    figures = _figures(exercise)
    assert budget > 0, f"{exercise.name}: no check_timeout_s below its timeout_s, so a loop runs to the grading's limit"
    assert budget + stopwatch.OVERSHOOT_S <= limits.LOOP_NAMED_WITHIN_S, f"{exercise.name}: {budget:g} s"
    assert budget >= FLOOR_S and budget == int(budget), f"{exercise.name}: {budget:g} s"
    assert budget >= HEADROOM_REFERENCE * figures["reference_s"], (exercise.name, budget, figures["slowest"])
    assert budget >= HEADROOM_ALTERNATIVES * figures["alternatives_s"], (exercise.name, budget, figures["alternative"])
    assert budget >= HEADROOM_WRONG * figures["wrong_s"], (exercise.name, budget, figures["wrong"])
