"""Shared fixtures: a private copy of the fixture mini-course, a CLI runner, and a learner's file in miniature."""

from __future__ import annotations

import shutil
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from course import ui
from support import FIXTURES, git_commit

if TYPE_CHECKING:
    from course.instructor.validate import ValidationReport

pytest_plugins = ["pytester"]

# Fixture courses and attack files are data: their graders run only under `course check`.
collect_ignore = ["fixtures", "adversarial/course", "adversarial/attacks"]
# The browser test of the class report needs a headless Chromium; CI has none, so there it is not collected.
if not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")):
    collect_ignore.append("instructor/test_report_browser.py")
# The Slurm array-job test starts its own slurmctld and slurmd (Debian's slurm-wlm); CI has neither.
if not all(shutil.which(name) for name in ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo")):
    collect_ignore.append("instructor/test_slurm.py")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def mini_course(tmp_path: Path) -> Path:
    """A writable copy of the mini-course (one exercise per outcome)."""
    dest = tmp_path / "mini_course"
    shutil.copytree(FIXTURES / "mini_course", dest, ignore=shutil.ignore_patterns("__pycache__", ".course"))
    git_commit(dest)
    return dest


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A typer CliRunner with a clean environment for `course`."""
    for name in ("COURSE_ROOT", "COURSE_WORKSPACE", "COURSE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    return CliRunner()


@pytest.fixture(autouse=True, scope="session")
def wide_output() -> Iterator[None]:
    """Output wide enough that no message wraps: tests look for phrases; tests/ui tests the wrapping."""
    ui.out.width = ui.err.width = 200
    yield
    ui.out.width = ui.err.width = 80


@pytest.fixture
def learner_module(tmp_path: Path) -> Callable[[str], types.ModuleType]:
    """Execute source from `learner.py` as a module, as the plugin loads a learner's submission."""

    def load(source: str) -> types.ModuleType:
        """The module made from `source`; its `__file__` is the file's path."""
        path = tmp_path / "learner.py"
        path.write_text(textwrap.dedent(source))
        module = types.ModuleType("learner")
        module.__file__ = str(path)
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102 - a learner's file
        return module

    return load


@pytest.fixture(scope="session")
def validation() -> ValidationReport:
    """`course validate` over the real course, run once for the content tests that read it: its
    verdicts, and the gradings behind them, graded two at a time."""
    from course.instructor.validate import validate
    from course.registry import load_course

    return validate(load_course(REPO), [], jobs=2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the course's own `course validate` (the longest single piece, a session fixture) first, so
    pytest-xdist starts it at once on one worker while the other takes the rest."""
    first = [item for item in items if item.path.name == "test_validate_course.py"]
    items[:] = first + [item for item in items if item.path.name != "test_validate_course.py"]
