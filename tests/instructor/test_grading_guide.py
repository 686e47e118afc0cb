"""docs/grading.md says what the commands do: every option documented, every command shown valid, no stale figure."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import typer.main
import yaml

from course.cli import app
from course.instructor.release import release
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "grading.md").read_text(encoding="utf-8")
COMMANDS = [("release",), ("grade",), ("gradebook", "merge"), ("autograder", "gradescope"),
            ("autograder", "classroom"), ("autograder", "prairielearn")]


def _command(path: tuple[str, ...]) -> click.Command:
    """The click command behind `course <path>`."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def _options(command: click.Command) -> set[str]:
    """Every long option a command takes."""
    return {o for p in command.params for o in [*p.opts, *p.secondary_opts] if o.startswith("--")}


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_option_is_documented(path: tuple[str, ...]) -> None:
    """Each long option of the instructor's grading commands appears in the guide."""
    missing = sorted(o for o in _options(_command(path)) - {"--help", "--course"} if f"`{o}" not in DOC and
                     f" {o} " not in DOC)
    assert not missing, f"course {' '.join(path)}: {missing} not in docs/grading.md"


def _shown() -> list[list[str]]:
    """Every `course ...` command the guide shows, in console blocks, scripts and workflow steps."""
    lines = []
    for block in re.findall(r"```(?:console|bash|yaml)\n(.*?)```", DOC, re.DOTALL):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            found = re.search(r"(?:^\$ |^|run: |--wrap \")(course \S.*)", line.strip())
            if found:
                command = re.split(r"\s+(?:\|\||&&|#)\s*|\"$", found[1])[0]
                lines.append(shlex.split(re.sub(r"\$\{\{[^}]*\}\}|\$\w+", "X", command)))
    return lines


def test_every_command_the_guide_shows_parses() -> None:
    """Each command shown names a real command and only its own options."""
    shown = _shown()
    assert len(shown) >= 10 and any(c[1:3] == ["gradebook", "merge"] for c in shown)
    for argv in shown:
        path = tuple(argv[1:3]) if argv[1] in ("gradebook", "autograder") else (argv[1],)
        known = {("validate",), ("new",)} | set(COMMANDS)
        assert path in known, argv
        if path in COMMANDS:
            unknown = {a.split("=")[0] for a in argv if a.startswith("--")} - _options(_command(path))
            assert not unknown, (argv, unknown)


def test_the_workflow_in_the_guide_is_valid_and_shards_what_it_merges() -> None:
    """The GitHub Actions example is YAML; its matrix is the N of its shards, and the merge joins each."""
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", DOC, re.DOTALL)[1])
    shards = workflow["jobs"]["grade"]["strategy"]["matrix"]["shard"]
    runs = [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    assert any(f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in r for r in runs)
    merge = next(r for r in runs if "gradebook merge" in r)
    assert all(f"shards/shard-{k}" in merge for k in shards)


def test_the_guide_states_no_stale_figure_and_grades_an_empty_folder_zero(tmp_path: Path) -> None:
    """A file count of the release, if the guide gives one, is the release's; an empty folder is graded 0."""
    count = len(release(load_course(REPO), tmp_path / "out", git=False))
    for claimed in re.findall(r"\((\d+) files", DOC):
        assert int(claimed) == count, f"docs/grading.md says {claimed} files; a release has {count}"
    flat = " ".join(DOC.split())
    assert "An empty folder is a student who tried nothing: graded 0." in flat
    assert not re.search(r"bad input[^.]*empty folder", flat)
