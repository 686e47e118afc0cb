"""A learner's file that does not compile, answered at once in the parent, before any grading starts.

Compiling takes milliseconds where a grading takes seconds (a process, JAX's import, the grader's
collection), and its verdict is certain: SPEC §7 says an exception while importing the file fails
every check. So the result is the one a grading would give, every check failed for that reason,
with the checks read from the grader's source (`course.points.static_checks`).
"""

from __future__ import annotations

from pathlib import Path

from course.engine.parent.verdict import CheckResult, ExerciseResult, summarize
from course.grading.judge.source import syntax_message
from course.pyast import TOO_DEEP
from course.registry import Exercise


def error(source: bytes, path: Path) -> str:
    """What is wrong when `source` does not compile as the plugin compiles it, else ''."""
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        return syntax_message(exc)
    except ValueError:  # a null byte, in older Pythons: the grading's import says the same in its words
        return ""
    except (RecursionError, MemoryError) as exc:  # a learner's nesting, never the platform's failure
        return f"your file is {TOO_DEEP} ({type(exc).__name__}), so no check can run: flatten the deepest expression."
    return ""


def result(exercise: Exercise, submission: Path, seed: int, *, hidden: bool = False) -> ExerciseResult | None:
    """The verdict on a file that does not compile (every check failed), or None when it compiles."""
    try:
        source = submission.read_bytes()
    except OSError:
        return None
    why = error(source, submission.resolve())
    if not why:
        return None
    from course.points import static_checks

    graders = [exercise.grader_path, *([exercise.hidden_grader_path] if hidden else [])]
    listed: list[dict[str, object]] = []
    for grader in graders:
        try:
            checks = static_checks(grader.read_text(encoding="utf-8")) if grader.is_file() else []
        except OSError:
            checks = None
        if checks is None:
            return None  # the checks cannot be named without pytest: let the grading say it
        listed += [{**c, "hidden": grader != exercise.grader_path} for c in checks]
    checks = [CheckResult(str(c["id"]), str(c["title"]), "failed", 0.0, float(c["max_score"]),  # type: ignore[arg-type]
                          why, hidden=bool(c["hidden"])) for c in listed]
    return summarize(ExerciseResult(name=exercise.name, status="failed", seed=seed, checks=checks))
