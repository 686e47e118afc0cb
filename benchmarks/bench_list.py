"""SPEC §8: `course list` wall time against `python -c "import rich, typer"` (goal: at most 1.5x)."""

import sys

from _common import COURSE, interleaved, report, solved_workspace


def main() -> None:
    """Measure both, interleaved, and print the ratio."""
    # As a learner runs it: inside a workspace made by `course init`, which records the course.
    workspace = solved_workspace()
    medians = interleaved(
        {"list": [*COURSE, "list"], "baseline": [sys.executable, "-c", "import rich, typer"]},
        cwd=workspace,
    )
    report("course list vs import rich, typer", medians["list"], medians["baseline"], 1.5)


if __name__ == "__main__":
    main()
