"""`course validate`: sound courses pass; each kind of sabotage is reported by exercise, file and exit code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from course import stubs
from course.cli import app
from course.instructor import checks as layout
from course.instructor.validate import plan, validate
from course.registry import load_course

MINI = Path(__file__).parents[1] / "fixtures" / "mini_course"
GRADER = (MINI / "graders" / "02_ex_fail" / "test_ex_fail.py").read_text(encoding="utf-8")
STUB = (MINI / "exercises" / "02_ex_fail" / "ex_fail.py").read_text(encoding="utf-8")
SOLUTION = (MINI / "solutions" / "02_ex_fail" / "ex_fail.py").read_text(encoding="utf-8")
WRONG = (MINI / "solutions" / "02_ex_fail" / "wrong" / "add_one.py").read_text(encoding="utf-8")
ENV = {"COURSE_NO_PROGRESS": "1", "COURSE_ROOT": None, "COURSE_WORKSPACE": None, "COURSE_DEBUG": None}


def write_course(root: Path, exercises: dict[str, dict[str, str]]) -> Path:
    """A course at `root` built from the mini-course's `ex_fail` pieces; `exercises` overrides files per name.

    Keys of each override: `stub`, `solution`, `grader`, and `wrong/FILE.py` for wrong variants.
    An exercise without overrides gets the mini-course's `add_one.py`, which must fail test_doubles.
    """
    names = list(exercises)
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_text(f'title = "Test course"\nexercises = {names!r}\n'.replace("'", '"'))
    for position, (name, files) in enumerate(exercises.items(), start=1):
        folder = f"{position:02d}_{name}"
        wrong = {k: v for k, v in files.items() if k.startswith("wrong/")} if files else {"wrong/add_one.py": WRONG}
        contents = {
            f"exercises/{folder}/{name}.py": files.get("stub", STUB),
            f"exercises/{folder}/README.md": f"# {name}\n\nReturn twice the input.\n",
            f"exercises/{folder}/exercise.toml": (MINI / "exercises" / "02_ex_fail" / "exercise.toml").read_text(),
            f"graders/{folder}/test_{name}.py": files.get("grader", GRADER),
            f"solutions/{folder}/{name}.py": files.get("solution", SOLUTION),
            **{f"solutions/{folder}/{k}": v for k, v in wrong.items()},
        }
        for rel, text in contents.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
    stubs.record(load_course(root), [])  # as `course new` and `course validate --record-stubs` do
    return root


def run_cli(*args: str) -> Result:
    """`course ARGS` through typer's CliRunner with a clean environment."""
    return CliRunner().invoke(app, list(args), env=ENV, catch_exceptions=False)


def problem_lines(output: str, name: str) -> list[str]:
    """The problem sentences printed for exercise `name`."""
    return [line for line in output.splitlines() if line.startswith(f"✗ {name}: ")]


# ---------------------------------------------------------------------------- a sound course


def test_sound_course_holds(tmp_path: Path) -> None:
    """Stub fails, solution passes, the wrong variant is caught: no problem, one progress step per grading."""
    course = load_course(write_course(tmp_path / "c", {"alpha": {}}))
    steps: list[str] = []
    report = validate(course, [], jobs=2, on_result=lambda result: steps.append(result.name))
    assert report.sound, report
    (alpha,) = report.exercises
    assert (alpha.stub.text, alpha.solution.text, alpha.wrong.text) == ("✓ fails", "✓ passes", "1/1 caught")
    assert steps == ["alpha", "alpha", "alpha"]
    assert report.exit_code == 0


class LentWorker:
    """A launcher lent to `validate`: it records each grading it is offered and lets it run cold (None)."""

    def __init__(self) -> None:
        self.offered: list[dict[str, str]] = []
        self.closed = False

    def launch(self, command: list[str], *, fds: dict[str, int], cwd: Path, env: dict[str, str], memory_mb: int,
               sandbox: str | None = None) -> None:
        """Record the grading's environment; None: the runner starts it cold."""
        self.offered.append(env)

    def close(self) -> None:
        """Its owner's to call, never validate's."""
        self.closed = True


def test_a_lent_warm_worker_is_offered_every_grading_and_kept_open(tmp_path: Path) -> None:
    """Validating with a lent worker and its cache (the content tests validate one exercise after another
    this way) offers that worker every grading, with that cache, gives the same verdicts, and leaves the
    worker to its owner."""
    course = load_course(write_course(tmp_path / "c", {"alpha": {}, "beta": {}}))
    lent, cache = LentWorker(), tmp_path / "cache"
    first = validate(course, ["alpha"], jobs=2, warm=(lent, cache))
    second = validate(course, ["beta"], jobs=2, warm=(lent, cache))
    assert first.sound and second.sound, (first, second)
    assert (second.exercises[0].stub.text, second.exercises[0].wrong.text) == ("✓ fails", "1/1 caught")
    assert len(lent.offered) == 6 and {env.get("JAX_COMPILATION_CACHE_DIR") for env in lent.offered} == {str(cache)}
    assert not lent.closed


def test_sound_course_exits_0_with_the_table(tmp_path: Path) -> None:
    """The command prints the table and exits 0 when everything holds."""
    root = write_course(tmp_path / "c", {"alpha": {}})
    result = run_cli("validate", "--course", str(root), "--jobs", "2")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "alpha" in line)
    assert "✓ fails" in row and "✓ passes" in row and "1/1 caught" in row, result.output
    assert "All 1 exercise(s) hold." in result.output


# ---------------------------------------------------------------------------- a sabotaged course

MISS_ZERO = '"""Returns 1 for 0; must fail test_doubles."""\n\n\ndef double(x):\n    return 2 * x if x else 1\n'
NOT_A_CHECK = '"""Adds one; must fail test_nope."""\n\n\ndef double(x):\n    return x + 1\n'
SABOTAGE = {
    "good": {},
    "sol_is_stub": {"solution": STUB},
    "wrong_passes": {"wrong/lucky.py": '"""Doubles; must fail test_doubles."""\n\n\n' + SOLUTION},
    "stub_passes": {"stub": SOLUTION},
    "bad_sig": {"stub": STUB.replace("def double(x):", "def double(x, y=1):")},
    "misnamed": {"wrong/miss_zero.py": MISS_ZERO, "wrong/not_a_check.py": NOT_A_CHECK},
}


@pytest.fixture(scope="module")
def sabotaged(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """One `course validate` over a course with one sabotage per exercise and an unlisted folder."""
    root = write_course(tmp_path_factory.mktemp("sabotaged") / "c", SABOTAGE)
    shutil.copytree(root / "exercises" / "01_good", root / "exercises" / "09_ghost")
    return run_cli("validate", "--course", str(root), "--jobs", "2")


def test_sabotaged_course_exits_1(sabotaged: Result) -> None:
    """Any unsound exercise makes the exit code 1, and the sound one stays clean."""
    assert sabotaged.exit_code == 1, sabotaged.output
    assert problem_lines(sabotaged.output, "good") == [], sabotaged.output
    assert "5 of 6 exercise(s) need work" in sabotaged.output


def test_solution_replaced_by_stub(sabotaged: Result) -> None:
    """A solution that fails is reported with its file and the checks it fails."""
    (line,) = problem_lines(sabotaged.output, "sol_is_stub")
    assert "solutions/02_sol_is_stub/sol_is_stub.py fails test_doubles, test_zero" in line
    assert "must pass every check" in line


def test_wrong_variant_that_passes(sabotaged: Result) -> None:
    """A wrong variant the grader does not catch is reported, and the table counts it."""
    lines = problem_lines(sabotaged.output, "wrong_passes")
    assert lines == [
        "✗ wrong_passes: solutions/03_wrong_passes/wrong/lucky.py passes every check; "
        "the grader does not catch this mistake."
    ], sabotaged.output
    row = next(line for line in sabotaged.output.splitlines() if "│ wrong_passes" in line)
    assert "0/1 caught" in row


def test_stub_that_already_passes(sabotaged: Result) -> None:
    """A stub that passes leaves nothing to the learner."""
    (line,) = problem_lines(sabotaged.output, "stub_passes")
    assert "exercises/04_stub_passes/stub_passes.py already passes every check" in line


def test_mismatched_signature(sabotaged: Result) -> None:
    """Stub and solution must agree on every public signature."""
    (line,) = problem_lines(sabotaged.output, "bad_sig")
    assert "`double` is `double(x, y=1)` in exercises/05_bad_sig/bad_sig.py but `double(x)`" in line


def test_wrong_variant_naming_the_wrong_check(sabotaged: Result) -> None:
    """A variant must fail the very check it names, and that check must exist."""
    lines = problem_lines(sabotaged.output, "misnamed")
    assert any("wrong/miss_zero.py fails test_zero but not test_doubles" in line for line in lines), lines
    assert any("wrong/not_a_check.py names test_nope, which graders/06_misnamed" in line for line in lines), lines


def test_unlisted_folder(sabotaged: Result) -> None:
    """A folder course.toml does not list is a course-level problem."""
    (line,) = problem_lines(sabotaged.output, "course")
    assert line.startswith("✗ course: exercises/09_ghost is not listed in course.toml; add `ghost`")


# ---------------------------------------------------------------------------- broken configuration: exit 2


def test_broken_exercise_toml_exits_2(tmp_path: Path) -> None:
    """A bad exercise.toml stops validation with one sentence naming the file and field."""
    root = write_course(tmp_path / "c", {"alpha": {}})
    meta = root / "exercises" / "01_alpha" / "exercise.toml"
    meta.write_text(meta.read_text() + "colour = 'red'\n")
    result = run_cli("validate", "--course", str(root))
    assert result.exit_code == 2, result.output
    assert "exercise.toml: field `colour` is not a known field" in " ".join(result.output.split())


def test_broken_course_toml_exits_2(tmp_path: Path) -> None:
    """A course.toml that is not TOML is a configuration error."""
    root = write_course(tmp_path / "c", {"alpha": {}})
    (root / "course.toml").write_text("exercises = [\n")
    result = run_cli("validate", "--course", str(root))
    assert result.exit_code == 2, result.output
    assert "course.toml is not valid TOML" in " ".join(result.output.split())


def test_unknown_name_exits_2(tmp_path: Path) -> None:
    """Validating a name that is not in course.toml is a usage error."""
    root = write_course(tmp_path / "c", {"alpha": {}})
    result = run_cli("validate", "nope", "--course", str(root))
    assert result.exit_code == 2, result.output
    assert "no exercise named `nope`" in " ".join(result.output.split())


# ---------------------------------------------------------------------------- static checks, no grading


def test_plan_grades_stub_solution_and_each_wrong_variant(tmp_path: Path) -> None:
    """Selecting names limits the gradings; a missing grader means nothing of it is graded."""
    root = write_course(tmp_path / "c", {"alpha": {"wrong/b.py": NOT_A_CHECK, "wrong/c.py": NOT_A_CHECK}, "beta": {}})
    course = load_course(root)
    assert [j.role for j in plan(course, ["alpha"])] == ["stub", "solution", "wrong", "wrong"]
    (root / "graders" / "02_beta" / "test_beta.py").unlink()
    assert [j.exercise.name for j in plan(course, [])] == ["alpha"] * 4
    assert layout.static_problems(course.get("beta")) == [
        "graders/02_beta/test_beta.py is missing; every exercise needs its grader (see docs/authoring.md)."
    ]


def test_static_problems_name_each_file(tmp_path: Path) -> None:
    """Stray files, an undocumented wrong variant, placeholder hints and an empty README are each reported."""
    root = write_course(tmp_path / "c", {"alpha": {"wrong/silent.py": "def double(x):\n    return x\n"}})
    folder = "01_alpha"
    (root / "exercises" / folder / "notes.txt").write_text("scratch")
    (root / "graders" / folder / "helper.py").write_text("")
    (root / "graders" / folder / "inputs.npz").write_bytes(b"")  # data files beside the grader are fine
    (root / "solutions" / folder / "wrong" / "notes.md").write_text("")
    (root / "exercises" / folder / "README.md").write_text("  \n")
    meta = root / "exercises" / folder / "exercise.toml"
    meta.write_text('title = "a"\ntopic = "t"\nhints = ["TODO: write a hint", "Fine."]\n')
    problems = layout.static_problems(load_course(root).get("alpha"))
    expected = [
        "exercises/01_alpha/notes.txt is stray",
        "graders/01_alpha/helper.py is stray",
        "solutions/01_alpha/wrong/notes.md is stray",
        "exercises/01_alpha/README.md is empty",
        "exercises/01_alpha/exercise.toml: hint 1 is a placeholder",
        "solutions/01_alpha/wrong/silent.py does not name the check it must fail",
    ]
    missing = [e for e in expected if not any(p.startswith(e) for p in problems)]
    assert not missing, problems
    assert len(problems) == len(expected), problems


def test_folder_at_the_wrong_position(tmp_path: Path) -> None:
    """A folder named for a listed exercise but numbered wrongly says what to rename it to."""
    root = write_course(tmp_path / "c", {"alpha": {}})
    (root / "graders" / "01_alpha").rename(root / "graders" / "02_alpha")
    assert layout.folder_problems(load_course(root)) == [
        "graders/02_alpha does not match the position of `alpha` in course.toml; rename it to graders/01_alpha."
    ]


def test_stub_that_does_not_parse(tmp_path: Path) -> None:
    """A stub with a syntax error is reported with its line, not compared."""
    root = write_course(tmp_path / "c", {"alpha": {"stub": "def double(x)\n    return x\n"}})
    problems = layout.static_problems(load_course(root).get("alpha"))
    assert problems == ["exercises/01_alpha/alpha.py does not parse (line 1: expected ':'); fix its syntax."]


def test_hidden_checks_are_proven_too(mini_course: Path) -> None:
    """Validate grades the hidden checks as well: a wrong variant may name one, and is caught by it;
    without the hidden grader the same variant passes, and validate says so."""
    result = run_cli("validate", "ex_fail", "--course", str(mini_course))
    assert result.exit_code == 0 and "2/2 caught" in result.output, result.output
    (mini_course / "graders" / "02_ex_fail" / "hidden" / "test_ex_fail_hidden.py").unlink()
    result = run_cli("validate", "ex_fail", "--course", str(mini_course))
    assert result.exit_code == 1, result.output
    assert "positive_only.py passes every check" in result.output
