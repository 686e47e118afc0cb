"""The registry: valid files load, bad ones give one sentence naming the file and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course.errors import RegistryError, UnknownExercise
from course.registry import load_course


def test_loads_course_and_derives_paths(mini_course: Path) -> None:
    """Exercises load in order with their metadata and derived paths."""
    course = load_course(mini_course)
    first = course.exercises[0]
    assert [e.name for e in course.exercises][:3] == ["ex_pass", "ex_fail", "ex_syntax"]
    assert first.folder == "01_ex_pass"
    assert first.stub_rel == Path("exercises/01_ex_pass/ex_pass.py")
    assert first.grader_path == mini_course / "graders/01_ex_pass/test_ex_pass.py"
    assert first.solution_path == mini_course / "solutions/01_ex_pass/ex_pass.py"
    assert first.meta.timeout_s == 20 and first.meta.devices == 1
    assert first.meta.hints[0] == "Look at the task."


def test_unknown_exercise_is_named(mini_course: Path) -> None:
    """Asking for a name not in course.toml raises UnknownExercise naming it."""
    with pytest.raises(UnknownExercise, match="nope"):
        load_course(mini_course).get("nope")


def test_extra_field_names_file_and_field(mini_course: Path) -> None:
    """An unknown field in exercise.toml is refused, naming the file and the field."""
    meta = mini_course / "exercises/01_ex_pass/exercise.toml"
    meta.write_text(meta.read_text() + 'colour = "blue"\n')
    with pytest.raises(RegistryError) as info:
        _ = load_course(mini_course).exercises
    assert "exercise.toml" in str(info.value) and "`colour`" in str(info.value)


def test_wrong_type_names_field(mini_course: Path) -> None:
    """A field of the wrong type is refused with its name."""
    meta = mini_course / "exercises/02_ex_fail/exercise.toml"
    meta.write_text(meta.read_text().replace("timeout_s = 20", 'timeout_s = "soon"'))
    with pytest.raises(RegistryError, match="`timeout_s`"):
        _ = load_course(mini_course).exercises


def test_broken_toml_is_one_sentence(mini_course: Path) -> None:
    """Malformed TOML names the file."""
    (mini_course / "course.toml").write_text("title = [unclosed\n")
    with pytest.raises(RegistryError, match="course.toml is not valid TOML"):
        load_course(mini_course)


@pytest.mark.parametrize(
    ("names", "needle"),
    [('["Bad-Name"]', "not a valid name"), ('["a", "a"]', "listed twice"), ('["' + "x" * 41 + '"]', "not a valid")],
)
def test_bad_names_are_refused(mini_course: Path, names: str, needle: str) -> None:
    """Names are unique, lower-case [a-z0-9_] and at most 40 characters."""
    (mini_course / "course.toml").write_text(f'title = "t"\nexercises = {names}\n')
    with pytest.raises(RegistryError, match=needle):
        load_course(mini_course)


def test_missing_exercise_toml(mini_course: Path) -> None:
    """A listed exercise without exercise.toml is a RegistryError naming the path."""
    (mini_course / "exercises/03_ex_syntax/exercise.toml").unlink()
    with pytest.raises(RegistryError, match="03_ex_syntax/exercise.toml is missing"):
        _ = load_course(mini_course).exercises


def test_newer_format_asks_for_upgrade(mini_course: Path) -> None:
    """A course.toml from a newer format stops with 'upgrade'."""
    (mini_course / "course.toml").write_text('format_version = 9\ntitle = "t"\nexercises = []\n')
    with pytest.raises(RegistryError, match="upgrade"):
        load_course(mini_course)


def test_grader_hash_changes_with_grader(mini_course: Path) -> None:
    """Editing the grader or the metadata changes the hash that progress records; nothing else does."""
    exercise = load_course(mini_course).exercises[0]
    exercise.stub_path.write_text(exercise.stub_path.read_text() + "\n# the learner's edit\n")
    assert load_course(mini_course).exercises[0].grader_hash == exercise.grader_hash
    exercise.grader_path.write_text(exercise.grader_path.read_text() + "\n# changed\n")
    after_grader = load_course(mini_course).exercises[0].grader_hash
    assert after_grader != exercise.grader_hash
    exercise.meta_path.write_text(exercise.meta_path.read_text() + "\n# changed\n")
    assert load_course(mini_course).exercises[0].grader_hash not in (after_grader, exercise.grader_hash)


def test_points_known_without_grading(mini_course: Path) -> None:
    """Each exercise's maximum is read from its grader's marks, and follows an edit of the grader."""
    exercise = load_course(mini_course).get("ex_fail")
    marks = exercise.grader_path.read_text().count("@pytest.mark.points")
    assert exercise.max_score is not None and exercise.max_score > 0 and marks
    exercise.grader_path.write_text(
        exercise.grader_path.read_text() + '\n\n@pytest.mark.points(5)\ndef test_extra(submission):\n    """x"""\n'
    )
    assert load_course(mini_course).get("ex_fail").max_score == exercise.max_score + 5


@pytest.mark.parametrize(
    "typed",
    ["ex_fail", "2", "02", "02_ex_fail", "ex-fail", "ex_fail.py", "exercises/02_ex_fail", "exercises/02_ex_fail/",
     "./exercises/02_ex_fail/ex_fail.py", "/home/me/ws/exercises/02_ex_fail/ex_fail.py",
     "exercises/02_ex_fail/README.md", "EX_FAIL"],
)
def test_an_exercise_as_people_type_it(mini_course: Path, typed: str) -> None:
    """The name, the number (with or without its zero), the folder, a path to the folder or the file
    (relative, absolute, tab-completed with its slash), the file's name and the dashed form all name it."""
    assert load_course(mini_course).get(typed).name == "ex_fail"


@pytest.mark.parametrize(
    ("typed", "closest"),
    [("ex_fial", "`ex_fail`"), ("exercises/02_ex_fial/ex_fial.py", "`ex_fail`"), ("syntax", "`ex_syntax`")],
)
def test_a_wrong_name_gets_the_closest(mini_course: Path, typed: str, closest: str) -> None:
    """A typo, in a name or a path, is one sentence naming the closest exercises."""
    with pytest.raises(UnknownExercise) as info:
        load_course(mini_course).get(typed)
    message = str(info.value)
    assert message.startswith(f"There is no exercise named `{typed}`; did you mean ") and closest in message
    assert "\n" not in message and message.endswith("(`course list` shows the names)")


def test_a_number_out_of_range_is_unknown(mini_course: Path) -> None:
    """A number past the last exercise, or 0, names nothing."""
    course = load_course(mini_course)
    for typed in ("0", "8", "99"):
        with pytest.raises(UnknownExercise):
            course.get(typed)


def _with_parts(mini_course: Path, parts: str) -> None:
    """Add a `parts` field to the mini course's course.toml."""
    toml = mini_course / "course.toml"
    toml.write_text(toml.read_text() + f"parts = {parts}\n")


def test_parts_give_headings_by_first_exercise(mini_course: Path) -> None:
    """`parts` in course.toml names each part's first exercise; the course keeps its ordered list."""
    _with_parts(mini_course, '[{title = "Basics", first = "ex_pass"}, {title = "Crashes", first = "ex_syntax"}]')
    course = load_course(mini_course)
    assert course.part_titles() == {"ex_pass": "Basics", "ex_syntax": "Crashes"}
    assert course.meta.exercises[0] == "ex_pass"


@pytest.mark.parametrize(
    ("parts", "needle"),
    [('[{title = "A", first = "nope"}]', "which `exercises` does not list"),
     ('[{title = "A", first = "ex_fail"}, {title = "B", first = "ex_pass"}]', "must start after the part before"),
     ('[{title = "A"}]', "`parts.0.first`")],
)
def test_bad_parts_name_the_field(mini_course: Path, parts: str, needle: str) -> None:
    """A part that starts at an unknown exercise, out of order, or without a start, is refused by field."""
    _with_parts(mini_course, parts)
    with pytest.raises(RegistryError, match=re.escape(needle)) as info:
        load_course(mini_course)
    assert "course.toml" in str(info.value)


def test_an_unchanged_course_is_read_from_its_memo(mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once memoized, a course whose files keep their stat signatures is loaded without reading them
    (what keeps `course list` as fast with 25 exercises as with 3); any write to a grader, even one
    that keeps its size and modification time, is seen."""
    import os

    from course import memo, registry

    monkeypatch.setattr(memo, "RACY_NS", -(10**18))  # trust files however recently written
    first = load_course(mini_course).get("ex_fail")

    def no_reading(path: Path) -> bytes:
        raise AssertionError(f"{path} was read")

    with monkeypatch.context() as patched:
        patched.setattr(registry, "_read_or_empty", no_reading)
        again = load_course(mini_course).get("ex_fail")
    assert (again.max_score, again.grader_hash) == (first.max_score, first.grader_hash)
    grader = first.grader_path
    before = grader.stat()
    text = grader.read_text()
    grader.write_text(text.replace("points(2)", "points(7)"))
    os.utime(grader, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = load_course(mini_course).get("ex_fail")
    assert changed.max_score == first.max_score + 5 and changed.grader_hash != first.grader_hash
