"""Property-based checks: Hypothesis, seeded by the check, bounded, its smallest failure told as one line.

`check_property(prop, strategy, seed=seed, reproduce=...)` runs `prop` on any fixed `examples`,
then on cases drawn from `strategy`. The draw is derandomized from the check's seed, so
`course check --seed N` draws the same cases; it keeps no example database, says nothing about
health checks, and stops after `max_examples` cases. When a case fails, Hypothesis shrinks it
for at most `shrink_seconds`, and the check fails with the smallest case written by `reproduce`
as a line the learner can run.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from course.grading.feedback import CheckFailed, fail
from course.grading.judge.source import describe_exception, learner_location

__all__ = ["assert_gave", "check_property"]

T = TypeVar("T")


def _prepare_hypothesis() -> None:
    """Let Hypothesis set up its own random generator now, while graders are collected.

    It checks the new generator with `gc.get_referrers`, which the grading guard refuses once
    learner code runs (`course.engine.common.notary`); done at import, it never needs to again.
    """
    with contextlib.suppress(Exception):  # a Hypothesis without this internal simply does it later
        from hypothesis.internal.entropy import deterministic_PRNG

        with deterministic_PRNG(0):
            pass


_prepare_hypothesis()


class _Falsified(Exception):
    """Raised for every failing case from one line, so Hypothesis sees a single kind of failure."""


def check_property(prop: Callable[[T], None], strategy: Any, *, seed: int, rule: str,
                   reproduce: Callable[[T], str] = repr, examples: Sequence[T] = (), max_examples: int = 30,
                   shrink_seconds: float = 1.0, path: Path | None = None,
                   explain: Callable[[BaseException], str | None] | None = None) -> None:
    """Run `prop` on `examples`, then on cases from `strategy`; fail with the smallest failing case.

    `prop(case)` fails a case by raising `CheckFailed` (its message says what was seen against
    what was expected) or any exception from the learner's code (told with their line, and with
    `explain(exc)` when that has something to add). `examples` always run first, unshrunk: give
    the cases that a usual mistake must fail, so catching it never depends on the draw.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, example, given, settings
    from hypothesis import seed as seeded

    failures: dict[str, tuple[T, str]] = {}
    clock: list[float] = []

    def body(case: T) -> None:
        key = repr(case)
        if key not in failures:
            # Past the budget, unseen cases pass at once: the shrinker finds nothing smaller
            # and stops, and the smallest failure so far is what it reports.
            if clock and time.perf_counter() - clock[0] > shrink_seconds:
                return
            detail = _run(prop, case, path, explain)
            if detail is None:
                return
            failures[key] = (case, detail)
            clock.append(time.perf_counter())
        raise _Falsified(key)

    config = settings(max_examples=max_examples, deadline=None, database=None, derandomize=False,
                      report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                      phases=(Phase.explicit, Phase.generate, Phase.shrink),
                      verbosity=Verbosity.quiet, print_blob=False)
    test = given(strategy)(body)
    for case in reversed(examples):  # decorators apply inside out: keep the given order
        test = example(case)(test)
    test = seeded(seed)(config(test))
    try:
        with _scratch_storage():
            test()
    except _Falsified as exc:
        case, detail = failures[exc.args[0]]
        fail(f"{rule} The smallest failing case found: `{reproduce(case)}` {detail} "
             "(cases are drawn from the run's seed: `--seed` repeats them).")


def assert_gave(got: Any, want: Any, *, small: int = 24) -> None:
    """Fail with 'gave X, expected Y' (whole arrays up to `small` elements, else the first difference)."""
    from course.grading.judge.arrays import assert_array

    want = np.asarray(want)
    try:
        assert_array(got, want, name="the result")
    except CheckFailed as exc:
        if getattr(got, "shape", None) == want.shape and want.size <= small:
            fail(f"gave {_one_line(got)}, expected {_one_line(want)}")
        fail(f"gave a wrong value: {str(exc).removeprefix('the result ')}")


def _one_line(x: Any) -> str:
    """An array on one line."""
    return " ".join(np.array2string(np.asarray(x), separator=", ").split())


def _run(prop: Callable[[T], None], case: T, path: Path | None,
         explain: Callable[[BaseException], str | None] | None) -> str | None:
    """None when `prop` accepts `case`, else what went wrong, in a sentence fragment."""
    try:
        prop(case)
    except CheckFailed as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - any exception of the learner's code fails the case
        extra = explain(exc) if explain is not None else None
        where = learner_location(exc.__traceback__, path)
        return f"raised {describe_exception(exc)}{where}" + (f": {extra}" if extra else "")
    return None


@contextlib.contextmanager
def _scratch_storage() -> Iterator[None]:
    """Give Hypothesis a temporary home, so its caches are never written beside the grader."""
    from hypothesis import configuration

    setter = getattr(configuration, "set_hypothesis_home_dir", None)
    if setter is None:  # an older Hypothesis: it writes where it always did
        yield
        return
    before = vars(configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="course-hypothesis-") as home:
        setter(home)
        try:
            yield
        finally:
            setter(before)
