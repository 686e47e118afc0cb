"""Shared fixtures: a private copy of the fixture mini-course, a CLI runner, and a learner's file in miniature."""

from __future__ import annotations

import os
import shutil
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course import ui
from support import FIXTURES, git_commit

pytest_plugins = ["pytester"]

# The suite grades the course's own fixture files, which it trusts: where it runs as root with no unprivileged
# user to grade as, `course grade` would otherwise refuse (tests/adversarial/test_trust.py tests the refusal).
os.environ.setdefault("COURSE_TRUST_SUBMISSIONS", "1")

# Fixture courses and attack files are data: their graders run only under `course check`.
collect_ignore = ["fixtures", "adversarial/course", "adversarial/attacks"]
# The browser test of the class report needs a headless Chromium; CI has none, so there it is not collected.
if not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")):
    collect_ignore.append("instructor/test_report_browser.py")
# The Slurm array-job test starts its own slurmctld and slurmd (Debian's slurm-wlm); CI has neither.
if not all(shutil.which(name) for name in ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo")):
    collect_ignore.append("instructor/test_slurm.py")


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


@pytest.fixture(scope="session")
def shared_xla_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """One compilation cache for the whole run, shared by both test workers, for the tests that grade the real
    course over a warm worker (its validation, the alternatives, inspections), as one workspace's cache serves a
    learner's every command. A grader's own programs, and a reference graded again, compile once per run instead of
    once per file and worker. Gradings write it whole, entry by entry (`course.engine.common.compile_cache`), so
    two at once never see half an entry; a hit still counts as a compile, so no verdict depends on it."""
    root = tmp_path_factory.getbasetemp()
    path = (root if worker_id == "master" else root.parent) / "xla-cache-shared"
    path.mkdir(exist_ok=True)
    return path


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


# The longest work starts first, in this order, so that no worker is left alone with a long file at the end
# (pytest-xdist hands out files and classes in the order of the items: `--no-loadscope-reorder`). Seconds are
# one worker's on an idle 2-core machine. The two long quiet pieces (the attack corpus is graded before its
# first test reports; the stops are one test) start on different workers beside tests that report often,
# so the run is never silent for minutes. Everything else follows in pytest's order.
LONGEST = (
    "tests/adversarial/test_attacks.py",  # 130 s, 119 of them grading the corpus
    "tests/content/test_alternatives.py",  # 140 s, an exercise at a time
    "tests/adversarial/test_judge.py",  # 300 s, 190 of them in two tests that grade a class and a corpus
    "tests/instructor/test_stops.py",  # 125 s in one test
    "tests/inspect/test_inspect_course.py",  # 60 s
    "tests/content/test_validate_course.py",  # 600 s in 25 classes of 10 to 60 s, one per exercise
    "tests/adversarial/test_batch.py",  # 45 s
    "tests/adversarial/test_diverge.py",  # 45 s, grading its corpus before its first test reports
    "tests/engine/test_cohort.py",  # 30 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the items of LONGEST's files and classes to the front, in LONGEST's order."""

    def rank(item: pytest.Item) -> int:
        """The position of the item's file or class in LONGEST, or after all of them."""
        return next((i for i, scope in enumerate(LONGEST) if item.nodeid.startswith(f"{scope}::")), len(LONGEST))

    items.sort(key=rank)
