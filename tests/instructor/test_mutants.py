"""`course validate --mutants`: each operator's mutants, the sample, equivalents, and the command end to end."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app
from course.errors import RegistryError
from course.instructor import mutants as making
from course.instructor.mutant_edits import annotate, apply, diff, normal
from course.instructor.mutant_operators import OPERATORS
from course.registry import load_course

ENV = {"COURSE_NO_PROGRESS": "1", "COURSE_ROOT": None, "COURSE_WORKSPACE": None, "COURSE_DEBUG": None}


def mutated(operator: str, source: str) -> list[str]:
    """The changed lines (`diff`) of every mutant `operator` proposes for `source`, in node order."""
    source = textwrap.dedent(source)
    tree = annotate(ast.parse(source))
    nodes = sorted((n for n in ast.walk(tree) if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))
    out = []
    for node in nodes:
        for mutation in OPERATORS[operator].propose(node):
            text = apply(source, mutation)
            ast.parse(text)  # every mutant of the table is valid Python
            out.append(diff(source, text))
    return out


# ---------------------------------------------------------------------------- the operators, one by one
CASES = [
    ("donate", "f = jax.jit(g, donate_argnums=(0, 1))",
     ["- f = jax.jit(g, donate_argnums=(0, 1))\n+ f = jax.jit(g)",
      "- f = jax.jit(g, donate_argnums=(0, 1))\n+ f = jax.jit(g, donate_argnums=(0,))"]),
    ("jit", "@jax.jit\ndef f(x):\n    return x\n",
     ["- @jax.jit",
      "- @jax.jit\n- def f(x):\n+ def _f_body(x):\n+ def f(*args, **kwargs):\n"
      "+ return jax.jit(_f_body)(*args, **kwargs)"]),
    ("jit", "step = jax.jit(_step)",
     ["- step = jax.jit(_step)\n+ step = lambda *args, **kwargs: jax.jit(_step)(*args, **kwargs)",
      "- step = jax.jit(_step)\n+ step = _step"]),
    ("tile", "bm = 128", ["- bm = 128\n+ bm = 64", "- bm = 128\n+ bm = 256"]),
    ("grid", 'c(grid=(m // bm, n // bn), dimension_semantics=("parallel", "arbitrary"))',
     ['- c(grid=(m // bm, n // bn), dimension_semantics=("parallel", "arbitrary"))\n'
      '+ c(grid=(n // bn, m // bm), dimension_semantics=("parallel", "arbitrary"))',
      '- c(grid=(m // bm, n // bn), dimension_semantics=("parallel", "arbitrary"))\n'
      '+ c(grid=(m // bm, n // bn), dimension_semantics=("arbitrary", "arbitrary"))',
      '- c(grid=(m // bm, n // bn), dimension_semantics=("parallel", "arbitrary"))\n'
      '+ c(grid=(m // bm, n // bn), dimension_semantics=("parallel", "parallel"))']),
    ("when", "def k():\n    @pl.when(i == 0)\n    def _a():\n        pass\n    @pl.when(i == 1)\n    def _b():\n"
             "        pass\n",
     ["- @pl.when(i == 0)\n+ @pl.when(i == 1)\n- @pl.when(i == 1)\n+ @pl.when(i == 0)",
      "- @pl.when(i == 0)\n+ @pl.when(True)", "- @pl.when(i == 1)\n+ @pl.when(True)"]),
    ("precision", "y = jnp.dot(a, b, preferred_element_type=jnp.float32)",
     ["- y = jnp.dot(a, b, preferred_element_type=jnp.float32)\n+ y = jnp.dot(a, b)",
      "- y = jnp.dot(a, b, preferred_element_type=jnp.float32)\n"
      "+ y = jnp.dot(a, b, preferred_element_type=jnp.bfloat16)"]),
    ("dtype", "z = x.astype(jnp.bfloat16)",
     ["- z = x.astype(jnp.bfloat16)\n+ z = x.astype(jnp.float32)",
      "- z = x.astype(jnp.bfloat16)\n+ z = x.astype(jnp.float16)"]),
    ("init", "m = jnp.full(s, -jnp.inf)\nl = jnp.zeros(s)",
     ["- m = jnp.full(s, -jnp.inf)\n+ m = jnp.full(s, 0.0)", "- m = jnp.full(s, -jnp.inf)\n+ m = jnp.full(s, 1.0)",
      "- l = jnp.zeros(s)\n+ l = jnp.ones(s)"]),
    ("index_map", "spec = pl.BlockSpec((bm, bk), lambda i, j, k: (i, k))",
     ["- spec = pl.BlockSpec((bm, bk), lambda i, j, k: (i, k))\n"
      "+ spec = pl.BlockSpec((bm, bk), lambda i, j, k: (k, i))"]),
    ("ppermute", "y = lax.ppermute(x, 'i', perm)",
     ["- y = lax.ppermute(x, 'i', perm)\n+ y = lax.ppermute(x, 'i', [(dst, src) for (src, dst) in perm])",
      "- y = lax.ppermute(x, 'i', perm)\n+ y = lax.ppermute(x, 'i', list(perm)[:-1])"]),
    ("collective", "g = lax.psum(g, 'd')",
     ["- g = lax.psum(g, 'd')\n+ g = lax.pmean(g, 'd')", "- g = lax.psum(g, 'd')\n+ g = g"]),
    ("psum_moved", 'y = lax.psum(h @ w2, "tp")',
     ["- y = lax.psum(h @ w2, \"tp\")\n+ y = lax.psum(h, 'tp') @ w2",
      "- y = lax.psum(h @ w2, \"tp\")\n+ y = h @ lax.psum(w2, 'tp')"]),
    ("psum_moved", "r = lax.psum(jnp.sum(b), 'i') / n",
     ["- r = lax.psum(jnp.sum(b), 'i') / n\n+ r = jnp.sum(lax.psum(b, 'i')) / n",
      "- r = lax.psum(jnp.sum(b), 'i') / n\n+ r = lax.psum(jnp.sum(b) / n, 'i')"]),
    ("psum_moved", "def f(xs, g, acc):\n    for x in xs:\n        acc += lax.psum(x * g, 'i')\n    return acc\n",
     ["- acc += lax.psum(x * g, 'i')\n+ acc += x * g\n+ acc = lax.psum(acc, 'i')",
      "- acc += lax.psum(x * g, 'i')\n+ acc += lax.psum(x, 'i') * g",
      "- acc += lax.psum(x * g, 'i')\n+ acc += x * lax.psum(g, 'i')"]),
    ("psum_moved", "out = lax.psum(done, axis)", []),
    ("spec", "s = P('x', None)", ["- s = P('x', None)\n+ s = P(None, None)", "- s = P('x', None)\n+ s = P(None, 'x')"]),
    ("loop", "for i in range(n - 1):\n    pass\n",
     ["- for i in range(n - 1):\n+ for i in range((n - 1) - 1):",
      "- for i in range(n - 1):\n+ for i in range((n - 1) + 1):"]),
    ("loop", "for i in range(*r.indices(n)):\n    pass\n", []),
    ("constant", "y = 3 * x + 0.5", ["- y = 3 * x + 0.5\n+ y = 4 * x + 0.5", "- y = 3 * x + 0.5\n+ y = 2 * x + 0.5",
                                    "- y = 3 * x + 0.5\n+ y = 3 * x + 1.0", "- y = 3 * x + 0.5\n+ y = 3 * x + 0.0"]),
    ("delete", '"""Doc."""\nimport os\n\n\ndef f(x):\n    """Doc."""\n    y = x\n    return y\n',
     ["- y = x\n+ pass", "- return y\n+ pass"]),
    ("arith", "def f(a, b, c):\n    acc = a - b * c\n    acc += pl.cdiv(a, b)\n",
     ["- acc = a - b * c\n+ acc = a + b * c", "- acc = a - b * c\n+ acc = a - b / c",
      "- acc += pl.cdiv(a, b)\n+ acc -= pl.cdiv(a, b)", "- acc += pl.cdiv(a, b)\n+ acc = pl.cdiv(a, b)",
      "- acc += pl.cdiv(a, b)\n+ acc += a // b"]),
    ("compare", "ok = k == n - 1", ["- ok = k == n - 1\n+ ok = k != n - 1"]),
]


@pytest.mark.parametrize(("operator", "source", "expected"), CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_each_operator_makes_its_mutants(operator: str, source: str, expected: list[str]) -> None:
    """Each operator proposes exactly the intended mutants of a small source, in the same order every time."""
    assert mutated(operator, source) == expected
    assert mutated(operator, source) == expected


def test_brackets_keep_the_meaning_of_the_mutant() -> None:
    """A swapped-in compound expression is bracketed where its neighbours bind tighter."""
    found = mutated("arith", "y = c - pl.cdiv(a + 1, b) * 2")
    assert "- y = c - pl.cdiv(a + 1, b) * 2\n+ y = c - ((a + 1) // b) * 2" in found
    assert "- y = c - pl.cdiv(a + 1, b) * 2\n+ y = c + pl.cdiv(a + 1, b) * 2" in found


def test_a_psum_moved_out_of_a_loop_sums_once_after_it() -> None:
    """The loop adds the local values, and the one psum comes after the loop, at the loop's indentation."""
    source = "def f(xs, acc):\n    for x in xs:\n        acc += lax.psum(x, 'i')\n    return acc\n"
    tree = annotate(ast.parse(source))
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.AugAssign)]
    (moved,) = [m for m in OPERATORS["psum_moved"].propose(node) if "out of the loop" in m.label]
    assert apply(source, moved) == ("def f(xs, acc):\n    for x in xs:\n        acc += x\n"
                                    "    acc = lax.psum(acc, 'i')\n    return acc\n")


def test_the_table_documents_every_operator() -> None:
    """Every operator has a name and a one-line summary (docs/authoring.md lists them)."""
    doc = (Path(__file__).parents[2] / "docs" / "authoring.md").read_text(encoding="utf-8")
    for name, op in OPERATORS.items():
        assert op.summary and "\n" not in op.summary
        assert f"`{name}`" in doc, f"docs/authoring.md does not describe the `{name}` operator"


# ---------------------------------------------------------------------------- making an exercise's mutants
SOLUTION = '''"""Twice x, with a constant checked at import."""
SCALE = 2
assert SCALE == 2


def double(x):
    """Return twice x."""
    if x > 5000:
        return x + x
    return SCALE * x
'''
EQUIVALENT = '''
[[mutants.equivalent]]
diff = """
- if x > 5000:
+ if x >= 5000:
"""
reason = "Both branches return twice x, so the boundary of the test cannot change the result."
'''


def make_exercise(root: Path, toml_tail: str = "") -> Path:
    """The mini-course's `ex_fail` with the solution above and `toml_tail` added to its exercise.toml."""
    (root / "solutions" / "02_ex_fail" / "ex_fail.py").write_text(SOLUTION, encoding="utf-8")
    meta = root / "exercises" / "02_ex_fail" / "exercise.toml"
    meta.write_text(meta.read_text(encoding="utf-8") + toml_tail, encoding="utf-8")
    return root


def test_mutants_are_deterministic_distinct_and_sampled(mini_course: Path) -> None:
    """The same solution gives the same mutants; none twice, none the solution; a cap samples each operator."""
    exercise = load_course(make_exercise(mini_course)).get("ex_fail")
    everything = making.make(exercise, per_operator=0)
    assert [m.source for m in making.make(exercise, per_operator=0)] == [m.source for m in everything]
    trees = [ast.dump(ast.parse(m.source)) for m in everything]
    assert len(set(trees)) == len(trees) and ast.dump(ast.parse(SOLUTION)) not in trees
    assert [m.number for m in everything] == list(range(1, len(everything) + 1))
    capped = making.make(exercise, per_operator=1)
    per_op = {m.operator for m in everything}
    assert sorted(m.operator for m in capped) == sorted(per_op)
    assert {m.source for m in capped} <= {m.source for m in everything}
    assert [m.diff for m in capped] == [m.diff for m in making.make(exercise, per_operator=1)]


def test_skip_and_rewrites_from_exercise_toml(mini_course: Path) -> None:
    """`skip` leaves an operator out; `[[mutants.replace]]` adds the exercise's own rewrite."""
    tail = '\n[mutants]\nskip = ["delete"]\n\n[[mutants.replace]]\nfind = "SCALE * x"\nto = ["x * x"]\n'
    exercise = load_course(make_exercise(mini_course, tail)).get("ex_fail")
    found = making.make(exercise, per_operator=0)
    assert "delete" not in {m.operator for m in found}
    assert [m.diff for m in found if m.operator == making.REWRITE] == ["- return SCALE * x\n+ return x * x"]


def test_tiles_the_task_allows(mini_course: Path) -> None:
    """With `tiles`, the tile operator makes each allowed tile each other one and leaves other constants alone."""
    tiled = "BM = 128\nBN = 64\n\n\ndef double(x):\n    return 2 * x\n"

    def tile_diffs(tail: str) -> list[str]:
        """The diffs of the tile operator's mutants of `tiled` under this exercise.toml tail."""
        root = make_exercise(mini_course, tail)
        (root / "solutions" / "02_ex_fail" / "ex_fail.py").write_text(tiled, encoding="utf-8")
        return [m.diff for m in making.make(load_course(root).get("ex_fail"), per_operator=0) if m.operator == "tile"]

    assert tile_diffs("") == ["- BM = 128\n+ BM = 64", "- BM = 128\n+ BM = 256", "- BN = 64\n+ BN = 32",
                              "- BN = 64\n+ BN = 128"]
    assert tile_diffs("\n[mutants]\ntiles = [128, 256, 512]\n") == ["- BM = 128\n+ BM = 256",
                                                                      "- BM = 128\n+ BM = 512"]


def test_a_single_tile_is_one_sentence(mini_course: Path) -> None:
    """`tiles` with one size leaves the operator nothing to try: a registry error naming the field."""
    with pytest.raises(RegistryError, match=r"mutants\.tiles.*two or more different positive tile sizes"):
        load_course(make_exercise(mini_course, "\n[mutants]\ntiles = [128]\n"))


def test_an_unknown_skipped_operator_is_one_sentence(mini_course: Path) -> None:
    """A typo in `skip` is named, with the operators there are, rather than silently ignored."""
    exercise = load_course(make_exercise(mini_course, '\n[mutants]\nskip = ["delet"]\n')).get("ex_fail")
    with pytest.raises(RegistryError, match=r"`mutants\.skip` names `delet`, which is no operator.*delete"):
        making.make(exercise)


def test_equivalents_match_by_diff_and_operator(mini_course: Path) -> None:
    """A recorded equivalent matches the mutant with that diff (whatever its spacing), and no other."""
    exercise = load_course(make_exercise(mini_course, EQUIVALENT)).get("ex_fail")
    found = making.make(exercise, per_operator=0)
    matched = [m for m in found if making.equivalent(exercise, m)]
    assert [m.diff for m in matched] == ["- if x > 5000:\n+ if x >= 5000:"]
    assert normal("  -   if x > 5000:\n\n  +if x >= 5000:  ") == matched[0].diff
    assert making.stale(exercise, found) == []
    assert making.stale(exercise, [m for m in found if m not in matched]) == [matched[0].diff]


def test_a_bad_equivalent_is_one_sentence(mini_course: Path) -> None:
    """An equivalent without a reason is a registry error naming the file and the field."""
    tail = '\n[[mutants.equivalent]]\ndiff = "- a\\n+ b"\nreason = ""\n'
    with pytest.raises(RegistryError, match=r"exercise\.toml.*mutants\.equivalent\.0\.reason"):
        load_course(make_exercise(mini_course, tail))


def test_judging_a_grading() -> None:
    """Invalid Python never compiles; a timeout, an import failure and failed checks are told apart."""
    from course.engine.parent.verdict import CheckResult, ExerciseResult
    from course.instructor.mutation import judge
    from course.registry import load_course as load

    exercise = load(Path(__file__).parents[1] / "fixtures" / "mini_course").get("ex_fail")
    mutant = making.Mutant("ex_fail", 1, "delete", "x", 1, "def double(x):\n    return (\n", "- a\n+ b")
    assert not mutant.compiles and making.Mutant("e", 1, "o", "x", 1, "y = 1\n", "").compiles

    def result(status: str, *checks: tuple[str, str, str]) -> ExerciseResult:
        """A grading with these (id, status, message) checks."""
        return ExerciseResult("ex_fail", status, checks=[CheckResult(i, i, st, 0, 1, msg) for i, st, msg in checks])

    imported = "your file raised NameError while being imported, so no check can run:\n..."
    assert judge(exercise, mutant, result("timeout")).status == "timeout"
    assert judge(exercise, mutant, result("failed", ("a", "failed", imported), ("b", "failed", imported))).status \
        == "not_compiling"
    killed = judge(exercise, mutant, result("failed", ("a", "passed", ""), ("b", "failed", "wrong value")))
    assert (killed.status, killed.checks) == ("killed", ("b",))
    assert judge(exercise, mutant, result("passed", ("a", "passed", ""))).status == "survived"
    assert judge(exercise, mutant, result("error")).status == "error"


# ---------------------------------------------------------------------------- the command, end to end
@pytest.mark.slow
def test_validate_mutants_end_to_end(mini_course: Path) -> None:
    """Graded for real: killed by a named check, survived with its diff, equivalent, not compiling; exit 1."""
    make_exercise(mini_course, EQUIVALENT)
    result = CliRunner().invoke(app, ["validate", "--mutants", "ex_fail", "--json", "--course", str(mini_course),
                                      "--jobs", "2"], env=ENV, catch_exceptions=False)
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["exit_code"] == 1
    (ex,) = report["exercises"]
    outcomes = {o["diff"]: o for o in ex["outcomes"]}
    assert outcomes["- return SCALE * x\n+ return SCALE / x"]["status"] == "killed"
    # Its grading stopped at the first check it failed: test_zero, next, would fail too (2 / 0) and is not named.
    assert "test_doubles" in outcomes["- return SCALE * x\n+ return SCALE / x"]["checks"]
    assert "test_zero" not in outcomes["- return SCALE * x\n+ return SCALE / x"]["checks"]
    assert outcomes["- return x + x\n+ return x - x"]["status"] == "survived"
    assert outcomes["- if x > 5000:\n+ if x >= 5000:"]["status"] == "equivalent"
    assert outcomes["- if x > 5000:\n+ if x >= 5000:"]["reason"].startswith("Both branches")
    assert outcomes["- assert SCALE == 2\n+ assert SCALE != 2"]["status"] == "not_compiling"
    assert outcomes["- SCALE = 2\n+ SCALE = 3"]["status"] == "not_compiling"
    counts = {s: sum(o["status"] == s for o in ex["outcomes"]) for s in ("killed", "survived", "equivalent")}
    assert {s: ex[s] for s in counts} == counts and ex["mutants"] == len(ex["outcomes"])
    assert ex["score"] == pytest.approx(ex["killed"] / (ex["killed"] + ex["survived"]), abs=1e-4)
    assert set(report) >= {"course", "seed", "per_operator", "duration_s", "exercises", "totals", "operators"}
    assert report["every_check"] is False
    assert report["totals"]["mutants"] == ex["mutants"]


@pytest.mark.slow
def test_terminal_report_shows_scores_and_survivor_diffs(mini_course: Path) -> None:
    """Without --json: a table with each exercise's score, every survivor's diff, exit 0 when all are caught."""
    make_exercise(mini_course)
    runner = CliRunner()
    args = ["validate", "--mutants", "--course", str(mini_course), "--jobs", "2"]
    caught = runner.invoke(app, [*args, "ex_pass"], env=ENV, catch_exceptions=False)
    assert caught.exit_code == 0, caught.stdout
    assert "100%" in caught.stdout and "caught or explained" in caught.stdout
    weak = runner.invoke(app, [*args, "ex_fail"], env=ENV, catch_exceptions=False)
    assert weak.exit_code == 1
    assert "survived: x + x: + -> -" in weak.stdout and "+ return x - x" in weak.stdout
    assert "--json goes with --mutants" in runner.invoke(app, ["validate", "--json", "--course", str(mini_course)],
                                                         env=ENV).output
    alone = runner.invoke(app, ["validate", "--every-check", "--course", str(mini_course)], env=ENV)
    assert alone.exit_code == 2 and "--every-check goes with --mutants" in alone.output


@pytest.mark.parametrize("every_check", [False, True])
def test_every_check_is_asked_of_the_grading(mini_course: Path, monkeypatch: pytest.MonkeyPatch,
                                             every_check: bool) -> None:
    """By default each grading (the solution's and every mutant's) stops at its first failing check;
    with every_check none does, and the report says which it was."""
    from course.engine.parent.verdict import CheckResult, ExerciseResult
    from course.instructor import mutation
    from course.registry import load_course as load

    asked: list[bool] = []

    def grade_many(pairs: list, **options: object) -> list[ExerciseResult]:
        asked.append(bool(options["first_failure"]))
        return [ExerciseResult(e.name, "passed", checks=[CheckResult("t", "t", "passed", 1, 1)]) for e, _ in pairs]

    monkeypatch.setattr(mutation, "grade_many", grade_many)
    monkeypatch.setattr(mutation, "start_worker", lambda cache: None)
    course = load(make_exercise(mini_course))
    report = mutation.run(course, mutation.plan(course, ["ex_fail"], 2), jobs=1, per_operator=2,
                          every_check=every_check)
    assert asked == [not every_check] * 2 and report.to_json()["every_check"] is every_check
