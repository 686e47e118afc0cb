"""SPEC §8: `course check update_with_donate` (solved) against bare pytest on the same grader (goal: 1.15x)."""

from _common import COURSE, ROOT, bare_pytest, grading_env, interleaved, report, solved_workspace

NAME = "update_with_donate"


def main() -> None:
    """Measure both, interleaved, and print the ratio."""
    workspace = solved_workspace()
    medians = interleaved(
        {
            "check": [*COURSE, "--course", str(ROOT), "check", NAME, "--workspace", str(workspace)],
            "bare": bare_pytest(NAME, workspace),
        },
        env=grading_env(),
    )
    report(f"course check {NAME} vs bare pytest", medians["check"], medians["bare"], 1.15)


if __name__ == "__main__":
    main()
