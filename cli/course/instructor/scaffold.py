"""`course new`: scaffold an exercise, its grader, solution and `wrong/` folder, and register it.

Everything written here is a placeholder marked with `PLACEHOLDER`: it passes the metadata part
of `course validate` and fails the rest until the instructor fills it in.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from course import stubs
from course.errors import RegistryError, UsageError
from course.files import write_atomic
from course.registry import COURSE_FILE, NAME_RE, Course, Exercise, load_course

PLACEHOLDER = "TODO(course new)"
"""Marks scaffolded text that is not written yet; `course validate` flags it in hints and README."""

_README = """# {title}

{marker}: the lesson (the idea, in our own words) and the task: what to write in `{name}.py`,
for which inputs, and what the checks look at.
"""

_STUB = '''"""{title}: {marker} one line saying what the learner writes."""

import jax


def {name}(x: jax.Array) -> jax.Array:
    """{marker}: what `{name}` returns."""
    # TODO: write this function.
    raise NotImplementedError("`{name}` is not written yet")
'''

_SOLUTION = '''"""Reference solution of `{name}`."""

import jax


def {name}(x: jax.Array) -> jax.Array:
    """{marker}: what `{name}` returns."""
    raise NotImplementedError("{marker}: write the reference solution")
'''

_GRADER = '''"""Grader of `{name}`: {marker} say what the checks prove (one rule per check)."""

import jax.numpy as jnp
import pytest

from course.grading import assert_array


@pytest.mark.points(1)
def test_values(submission, rng):
    """{name} returns the right values."""
    x = jnp.asarray(rng.standard_normal(16), dtype=jnp.float32)
    expected = x  # {marker}: compute the expected value without the submission.
    assert_array(submission.{name}(x), expected, name="the result of `{name}(x)`")
'''

_HIDDEN = '''"""Hidden checks of `{name}`: run by `course grade` and the autograder bundles, never by `course check`.

{marker}: say what these checks prove that the public grader does not. Same conventions as the
public grader: one rule per check, the docstring's first line is its title, points by mark, and
every check id differs from the public grader's.
"""

import pytest

from course.grading import fail


@pytest.mark.points(1)
def test_hidden_rule(submission, rng):
    """{marker}: the rule this hidden check holds the learner to."""
    fail("{marker}: write this hidden check")
'''

_META = """# Metadata of `{name}`; docs/authoring.md explains each field.
title = "{title}"
topic = "{topic}"
hints = [
    "{marker}: a nudge towards the idea.",
    "{marker}: nearly the answer.",
]
timeout_s = 60
devices = 1
"""


def new_hidden(exercise: Exercise) -> Path:
    """Scaffold the hidden checks of an existing exercise; refuse if it has them already."""
    path = exercise.hidden_grader_path
    if path.exists():
        raise UsageError(f"{path} already exists; edit it, or remove it to start again.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_HIDDEN.format(name=exercise.name, marker=PLACEHOLDER), encoding="utf-8")
    return path


def new_exercise(course: Course, name: str, topic: str, *, hidden: bool = False) -> list[Path]:
    """Scaffold exercise `name` at the next position and append it to `course.toml`; return what was written.

    With `hidden`, the hidden grader (`graders/NN_name/hidden/test_name_hidden.py`) is scaffolded too.
    """
    _check_name(course, name, topic)
    position = len(course.meta.exercises) + 1
    folder = f"{position:02d}_{name}"
    root = course.root
    dirs = [root / "exercises" / folder, root / "graders" / folder, root / "solutions" / folder]
    for path in dirs:
        if path.exists():
            raise UsageError(f"{path} already exists; remove it or choose another name.")
    toml_path = root / COURSE_FILE
    new_toml = append_exercise(toml_path.read_text(encoding="utf-8"), name, toml_path)
    fields = {"name": name, "title": name.replace("_", " ").capitalize(), "topic": topic, "marker": PLACEHOLDER}
    files = {
        dirs[0] / "README.md": _README,
        dirs[0] / f"{name}.py": _STUB,
        dirs[0] / "exercise.toml": _META,
        dirs[1] / f"test_{name}.py": _GRADER,
        dirs[2] / f"{name}.py": _SOLUTION,
        dirs[2] / "wrong" / ".gitkeep": "",
    }
    if hidden:
        files[dirs[1] / "hidden" / f"test_{name}_hidden.py"] = _HIDDEN
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields), encoding="utf-8")
    write_atomic(toml_path, new_toml, keep_mode=True)
    stubs.record(load_course(root), [name])
    return [*files, toml_path, root / stubs.LOCK]


def _check_name(course: Course, name: str, topic: str) -> None:
    """Refuse a name that is invalid or taken, or an empty or unquotable topic."""
    if not NAME_RE.match(name):
        raise UsageError(f"`{name}` is not a valid exercise name; use a-z, 0-9 and _, at most 40 characters.")
    if name in course.meta.exercises:
        raise UsageError(f"`{name}` is already in course.toml; choose another name.")
    if not topic.strip() or any(c in topic for c in '"\\\n'):
        raise UsageError("give a short topic without quotes or backslashes, e.g. `--topic donation`.")


def append_exercise(text: str, name: str, path: Path) -> str:
    """Return `text` (a course.toml) with `name` appended to its `exercises` list, all else kept."""
    header = re.search(r"(?m)^\s*\[", text)
    top = text[: header.start()] if header else text
    match = re.search(r"(?m)^exercises\s*=\s*\[", top)
    if match is None:
        raise RegistryError(f"{path} has no top-level `exercises = [...]` list; add one and try again.")
    close, last = _scan_array(text, match.end(), path)
    new = text[: match.end()] + f'"{name}"' + text[match.end() :] if last is None else _insert(text, last, close, name)
    _check_edit(text, new, name, path)
    return new


def _scan_array(text: str, start: int, path: Path) -> tuple[int, int | None]:
    """The index of the array's closing `]`, and of its last significant character (None when empty)."""
    i, last, quote = start, None, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote, last = "", i
        elif c in "\"'":
            quote = c
        elif c == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif c == "]":
            return i, last
        elif not c.isspace():
            last = i
        i += 1
    raise RegistryError(f"{path}: the `exercises` list is not closed; fix it and try again.")


def _insert(text: str, last: int, close: int, name: str) -> str:
    """Insert `"name"` after the element ending at `last`, in the list's own style (one line or many)."""
    comma = text[last] == ","
    head = text[: last + 1] + ("" if comma else ",")
    rest = text[last + 1 :]
    if "\n" not in text[last:close]:
        # The `]` is on the last element's line: keep the list on that line.
        return head + f' "{name}"' + ("," if comma else "") + rest
    line_start = text.rfind("\n", 0, last) + 1
    indent = re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]
    eol = rest.index("\n")  # after any comment that follows the last element
    return head + rest[:eol] + f'\n{indent}"{name}"' + ("," if comma else "") + rest[eol:]


def _check_edit(old: str, new: str, name: str, path: Path) -> None:
    """Make sure the edit appended exactly `name` and changed nothing else."""
    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path} is not valid TOML ({exc}); fix it and try again.") from None
    expected = {**before, "exercises": [*before.get("exercises", []), name]}
    if after != expected:
        raise RegistryError(f"could not add `{name}` to {path} safely; add it to `exercises` by hand.")
