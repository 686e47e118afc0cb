"""SPEC §8: `course list` wall time against `python -c "import rich, typer"` (goal: at most 1.5x)."""

import sys

from _common import COURSE, ROOT, interleaved, report, solved_workspace


def main() -> None:
    """Measure both, interleaved, and print the ratio."""
    workspace = solved_workspace()
    medians = interleaved(
        {
            "list": [*COURSE, "--course", str(ROOT), "list", "--workspace", str(workspace)],
            "baseline": [sys.executable, "-c", "import rich, typer"],
        }
    )
    report("course list vs import rich, typer", medians["list"], medians["baseline"], 1.5)


if __name__ == "__main__":
    main()
