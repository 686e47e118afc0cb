"""Rendering of verdicts: each failure's reason under its check, a shared cause once, the learner's
output marked as theirs, a stopped grading's checks, the first failure only for several, and the
primitives' wrapping (words, never names or paths)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from course import ui
from course.engine.parent.verdict import CheckResult, ExerciseResult
from course.ui import verdicts, views


def _console(monkeypatch: pytest.MonkeyPatch, width: int = 200) -> io.StringIO:
    """Send ui.out to a buffer, without colour."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, color_system=None))
    return buffer


def _render(result: ExerciseResult, monkeypatch: pytest.MonkeyPatch, **options: object) -> list[str]:
    """The lines `result_block` prints, without colour."""
    buffer = _console(monkeypatch)
    verdicts.result_block(result, "ex.py", **options)  # type: ignore[arg-type]
    return buffer.getvalue().splitlines()


def _check(name: str, status: str, message: str = "", output: str = "") -> CheckResult:
    """A one-point check."""
    return CheckResult(name, f"title {name}", status, 1.0 if status == "passed" else 0.0, 1.0, message,
                       output=output)


def test_single_failure_reason_under_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone failing check has its reason on the next line, not at the end."""
    result = ExerciseResult(
        "ex", "failed", checks=[_check("a", "passed"), _check("b", "failed", "loads x_ref 3 times")]
    )
    lines = _render(result, monkeypatch)
    where = next(i for i, line in enumerate(lines) if "title b" in line)
    assert "loads x_ref 3 times" in lines[where + 1]


def test_shared_cause_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """When every failure has one cause (a syntax error), it is printed once, first, under the title: the
    rows of checks it failed come after it, so it never scrolls away behind them."""
    checks = [_check("a", "failed", "syntax error at line 1"), _check("b", "failed", "syntax error at line 1")]
    lines = _render(ExerciseResult("ex", "failed", checks=checks), monkeypatch)
    assert sum("syntax error at line 1" in line for line in lines) == 1
    assert "syntax error at line 1" in lines[1] and "title a" in lines[2] and "title b" in lines[3]


def test_markup_in_learner_text_is_not_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Square brackets in a message are shown as written, never as rich markup."""
    result = ExerciseResult("ex", "failed", checks=[_check("a", "failed", "x_ref[:, :4] [bold]not bold[/bold]")])
    assert any("x_ref[:, :4] [bold]not bold[/bold]" in line for line in _render(result, monkeypatch))


def test_repeated_reason_not_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Consecutive checks failing for the same reason print it once, then point back to it."""
    checks = [_check("a", "failed", "not written yet"), _check("b", "failed", "not written yet")]
    checks.append(_check("c", "failed", "no jitted helper"))
    lines = _render(ExerciseResult("ex", "failed", checks=checks), monkeypatch)
    assert sum("not written yet" in line for line in lines) == 1
    assert sum("(the same reason as above)" in line for line in lines) == 1


def test_long_reasons_wrap_at_words_under_their_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long title and message wrap at word boundaries, indented, with no trailing spaces."""
    title_words = " ".join(f"word{i}" for i in range(30))
    message = " ".join(f"reason{i}" for i in range(40))
    check = CheckResult("a", title_words, "failed", 0.0, 1.0, message)
    buffer = _console(monkeypatch, width=60)
    verdicts.result_block(ExerciseResult("ex", "failed", checks=[check]), "ex.py")
    lines = buffer.getvalue().splitlines()
    assert all(len(line) <= 60 and line == line.rstrip() for line in lines), lines
    words = buffer.getvalue().split()
    assert all(w in words for w in (title_words + " " + message).split())
    title_lines = [line for line in lines if "word" in line]
    assert len(title_lines) > 1 and len({len(line) - len(line.lstrip()) for line in title_lines[1:]}) == 1
    assert all(line.startswith(" " * 6) for line in lines if "reason" in line)


def test_a_path_is_never_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """A path longer than what is left of a line moves to the next line whole, even past the width."""
    path = "/home/learner/course/.course/backups/update_with_donate.20260101-120000-123456.py"
    buffer = _console(monkeypatch, width=60)
    ui.line(f"Your version is kept at {path}; `course restore` brings it back.")
    assert any(path in line for line in buffer.getvalue().splitlines())


def test_failing_check_shows_what_the_learner_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a failing check: its output, marked as the learner's, trimmed to the last lines; a
    passing check's output only with show_output."""
    printed = "\n".join(f"debug {i}" for i in range(40))
    checks = [_check("a", "passed", output="from a passing check"), _check("b", "failed", "wrong", output=printed)]
    lines = _render(ExerciseResult("ex", "failed", checks=checks), monkeypatch)
    text = "\n".join(lines)
    assert "your code printed (the last 12 of 40 lines" in text and "│  debug 39" in text
    assert "debug 27" not in text and "from a passing check" not in text
    shown = "\n".join(_render(ExerciseResult("ex", "failed", checks=checks), monkeypatch, show_output=True))
    assert "│  from a passing check" in shown


def test_terminal_control_codes_in_output_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A learner's coloured or cursor-moving output cannot repaint the verdict."""
    checks = [_check("a", "failed", "wrong", output="\x1b[2J\x1b[31mred\x1b[0m\rback")]
    text = "\n".join(_render(ExerciseResult("ex", "failed", checks=checks), monkeypatch))
    assert "\x1b" not in text and "\r" not in text and "redback" in text


def test_a_stopped_grading_marks_the_checks_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check that was running says where the code was; the later ones are listed as not run,
    without a reason each."""
    checks = [_check("a", "passed"), _check("b", "timeout", "still running at ex.py line 3, in double"),
              _check("c", "not_run"), _check("d", "not_run")]
    lines = _render(ExerciseResult("ex", "timeout", checks=checks), monkeypatch)
    text = "\n".join(lines)
    assert "⧖ timed out  title b" in text and "still running at ex.py line 3, in double" in text
    assert sum("○ not run" in line for line in lines) == 2
    assert text.count("still running") == 1


def test_a_stopped_runs_reason_is_said_once_where_it_happened(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop stopped at a limit: its reason is under the check it was in, and not said again at the end (the
    result's message, the same reason with the check's title, is for `--json`); the seed line follows."""
    why = ("your code used 8 s of CPU time in this check, the limit of one check, and was stopped at ex.py line 3, "
           "in double; is there a loop that never ends?\nwhere your code was (most recent call last):\n"
           "  ex.py line 3, in double: `while True:`")
    checks = [_check("a", "passed"), _check("b", "failed", why), _check("c", "not_run"), _check("d", "failed", "other")]
    message = f'{why.splitlines()[0]} (during "title b")'
    lines = _render(ExerciseResult("ex", "timeout", checks=checks, message=message, seed=7), monkeypatch)
    text = "\n".join(lines)
    assert text.count("is there a loop that never ends?") == 1 and "(during" not in text
    assert "seed 7" in lines[-1]


def test_a_file_that_never_ran_prints_no_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that does not compile (or whose import raised) failed every check for that one reason before any
    input was drawn: no seed line, which would offer to repeat inputs there never were."""
    why = "your file has a syntax error, so no check can run"
    lines = _render(ExerciseResult("ex", "failed", checks=[_check("a", "failed", why), _check("b", "failed", why)],
                                   message="0 of 2 checks passed", seed=7), monkeypatch)
    assert not any("seed" in line for line in lines), lines
    ran = [_check("a", "failed", "2 != 4 for x = 2"), _check("b", "failed", "2 != 6 for x = 3")]
    lines = _render(ExerciseResult("ex", "failed", checks=ran, message="0 of 2 checks passed", seed=7), monkeypatch)
    assert "seed 7" in lines[-1]


def test_an_interrupted_check_says_what_it_kept() -> None:
    """After Ctrl-C: nothing finished (the course's own failure is no verdict), one verdict of several, every
    verdict; with `--json` nothing is shown above the sentence."""
    passed = ExerciseResult("a", "passed")
    assert verdicts.kept([], 1) == "no verdict had been reached, so nothing was recorded."
    assert verdicts.kept([ExerciseResult("a", "error")], 3) == "no verdict had been reached, so nothing was recorded."
    assert verdicts.kept([passed], 3) == ("the verdict above is recorded; the other 2 exercises were not graded "
                                          "(run the same `course check` again for them).")
    assert verdicts.kept([passed, ExerciseResult("c", "failed")], 2) == "the 2 verdicts above are recorded."
    assert verdicts.kept([passed], 2, shown=False).startswith("1 verdict is recorded; the other exercise was not")


def test_several_exercises_show_the_first_failure_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without verbose, a failing exercise shows its first failing check and how many more there are."""
    checks = [_check("a", "passed"), _check("b", "failed", "first reason"), _check("c", "failed", "second reason")]
    text = "\n".join(_render(ExerciseResult("ex", "failed", checks=checks), monkeypatch, verbose=False))
    assert "first reason" in text and "second reason" not in text and "title a" not in text
    assert "1 more failing: `course check ex` shows every check." in text


def test_untouched_stub_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result not tried prints exactly one line."""
    result = ExerciseResult("ex", "failed", not_tried=True, checks=[_check("a", "failed", "NotImplementedError")])
    lines = _render(result, monkeypatch, not_tried="not started: the stub still raises NotImplementedError")
    assert lines == ["ex  · not tried  not started: the stub still raises NotImplementedError"]


def test_columns_align_without_trailing_spaces() -> None:
    """Cells line up in columns, the chosen ones flush right, and no line ends in a space."""
    from rich.text import Text

    rows = [[Text("a"), Text("long name"), Text("1/2")], [Text("bbb"), Text("x"), Text("10/20")]]
    lines = [t.plain for t in views.columns(rows, right={2})]
    assert lines == ["a    long name    1/2", "bbb  x          10/20"]


def test_human_times_are_local_and_short() -> None:
    """A stored UTC time reads as today/yesterday/a weekday/a date, in local time."""
    import calendar
    import time

    now = calendar.timegm((2026, 3, 10, 12, 0, 0))
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    local = time.localtime(now - 60)
    assert views.human_time(stamp(now - 60), now) == f"today {local.tm_hour:02d}:{local.tm_min:02d}"
    assert views.human_time(stamp(now - 86400), now).startswith("yesterday ")
    assert views.human_time(stamp(now - 3 * 86400), now)[:3] in ("Fri", "Sat", "Sun")
    assert " Jan " in views.human_time(stamp(now - 40 * 86400), now)
    assert views.human_time(stamp(now - 400 * 86400), now).endswith("2025")
    assert views.human_time(None) == "never checked"


def test_the_running_check_and_its_cpu_time_show_while_it_runs() -> None:
    """While a check runs, the live view names it and, once it has used a second, the share of its own CPU
    limit; when it ends, that line gives way to its verdict."""
    from course.engine.parent.verdict import CheckEvent
    from course.registry import load_course
    from support import FIXTURES

    course = load_course(FIXTURES / "mini_course")
    live = verdicts.LiveCheck(course.exercises[:1], len(course.exercises), 1)
    live.event(CheckEvent("ex_pass", "test_zero", "double(0) is 0.", "running"))
    assert live.lines()[-1].plain == "  … double(0) is 0."
    live.event(CheckEvent("ex_pass", "test_zero", "double(0) is 0.", "running", cpu_s=12.4, budget_s=20))
    assert live.lines()[-1].plain == "  … double(0) is 0. · 12 s of 20 s CPU"
    live.event(CheckEvent("ex_pass", "test_zero", "double(0) is 0.", "failed"))
    assert [line.plain for line in live.lines()[1:]] == ["  ✗ failed  double(0) is 0."]
