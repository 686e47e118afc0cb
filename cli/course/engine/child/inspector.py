"""The pytest plugin of an inspection run (`-p course.engine.child.inspector`): one check per section to observe.

`course inspect` runs in the grading process of `course check`, with the same plugin, notary,
limits and isolation; only the checks differ. They are the platform's own
(`course.engine.child.inspect_sections`), one per section of the exercise's `inspect` list, which the
parent writes to a file named by `--course-inspect` before the process starts, so learner code
never sees it change. Each check writes what it observed into the folder named by
`--course-inspect-out` and ends by raising `Observed` with the file's SHA-256: the notary signs
that message with the verdict, so the parent shows an observation only if the file it reads is
the one the check wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course.grading.feedback import CheckFailed


class Observed(CheckFailed):
    """The end of a section's check: the name and digest of the observation it wrote (never a verdict)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the options the inspection run passes; they do nothing unless given."""
    group = parser.getgroup("course-inspect", "course inspect")
    group.addoption("--course-inspect", help="JSON file listing the sections to observe")
    group.addoption("--course-inspect-out", help="folder the observations are written to")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One check per section, read from the file the parent wrote before the process started."""
    if "inspect_section" not in metafunc.fixturenames:
        return
    spec = metafunc.config.getoption("--course-inspect")
    sections = json.loads(Path(spec).read_text(encoding="utf-8"))["sections"] if spec else []
    metafunc.parametrize("inspect_section", sections, ids=[f"{i}-{s['show']}" for i, s in enumerate(sections)])


@pytest.fixture
def inspect_out(request: pytest.FixtureRequest) -> Path:
    """The folder this run's observations go to."""
    folder = request.config.getoption("--course-inspect-out")
    if not folder:
        raise pytest.UsageError("inspection checks run under `course inspect`; pass --course-inspect-out")
    return Path(folder)
