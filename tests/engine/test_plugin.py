"""The plugin inside a grading process, driven with pytester."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from course.engine.wire import report

GRADER = '''
import pytest
from course.grading import fail

def test_value(submission, rng):
    """The value is right."""
    x = int(rng.integers(1, 100))
    if submission.f(x) != x + 1:
        fail(f"f({x}) should be {x + 1}")

@pytest.mark.points(3)
def test_rule(submission):
    """A rule holds."""
    submission.g()

@pytest.mark.skip(reason="not today")
def test_skipped():
    """Skipped on purpose."""
'''


def _run(pytester: pytest.Pytester, source: str, *extra: str, grader: str = GRADER) -> tuple[dict, dict]:
    """Run the grader on a learner file with `source`; return (manifest, report)."""
    pytester.makepyfile(test_grader=grader)
    learner = pytester.path / "learner" / "sub.py"
    learner.parent.mkdir(exist_ok=True)
    learner.write_text(source)
    out = pytester.path / "report" / "report.json"
    out.parent.mkdir(exist_ok=True)
    pytester.runpytest_subprocess(
        "-p",
        "course.engine.child.plugin",
        "--course-report",
        str(out),
        "--course-submission",
        str(learner),
        "--course-seed",
        "5",
        *extra,
    )
    return report.read_signed(report.manifest_path(out), b""), report.read_signed(out, b"")


def _by_id(final: dict) -> dict:
    """Checks of a report keyed by id."""
    return {c["id"]: c for c in final["checks"]}


def test_titles_points_and_statuses(pytester: pytest.Pytester) -> None:
    """Titles come from docstrings, points from the marker; pass, fail and skip are told apart."""
    manifest, final = _run(pytester, "def f(x):\n    return x + 1\n\ndef g():\n    raise ValueError('nope')\n")
    assert [c["title"] for c in manifest["checks"]] == ["The value is right.", "A rule holds.", "Skipped on purpose."]
    checks = _by_id(final)
    assert [c["max_score"] for c in manifest["checks"]] == [1, 3, 1]
    assert checks["test_value"]["status"] == "passed"
    assert checks["test_rule"]["status"] == "failed"
    assert "your code raised ValueError: nope at sub.py line 5" in checks["test_rule"]["message"]
    assert checks["test_skipped"]["status"] == "skipped"
    assert final["tampered"] == [] and final["seed"] == 5


def test_grader_message_is_shown_as_written(pytester: pytest.Pytester) -> None:
    """A `fail()` message reaches the learner without pytest's noise."""
    _, final = _run(pytester, "def f(x):\n    return x\n\ndef g():\n    pass\n")
    assert (
        _by_id(final)["test_value"]["message"].startswith("f(")
        and "should be" in _by_id(final)["test_value"]["message"]
    )


def test_import_error_fails_every_learner_check(pytester: pytest.Pytester) -> None:
    """An exception at import fails each check that uses the submission, with the learner's traceback."""
    _, final = _run(pytester, "x = 1\nraise RuntimeError('broken at import')\n")
    checks = _by_id(final)
    for name in ("test_value", "test_rule"):
        assert checks[name]["status"] == "failed"
        assert "RuntimeError: broken at import while being imported" in checks[name]["message"]
        assert 'sub.py", line 2' in checks[name]["message"]


def test_sys_exit_inside_function(pytester: pytest.Pytester) -> None:
    """sys.exit inside the function fails that check, in plain words."""
    _, final = _run(pytester, "import sys\ndef f(x):\n    sys.exit(3)\n\ndef g():\n    pass\n")
    assert "called sys.exit(3) during the check at sub.py line 3" in _by_id(final)["test_value"]["message"]


def test_replacing_grading_machinery_is_noticed(pytester: pytest.Pytester) -> None:
    """A learner file that patches pytest's reporting at import is reported as tampering."""
    source = (
        "import _pytest.runner\n_pytest.runner.call_and_report = lambda *a, **k: None\ndef f(x):\n    return x + 1\n"
    )
    _, final = _run(pytester, source + "def g():\n    pass\n")
    assert any("_pytest.runner.call_and_report" in t for t in final["tampered"])


def test_learner_file_read_once(pytester: pytest.Pytester) -> None:
    """The source is read at start-up: a file that rewrites itself changes nothing for later checks."""
    source = (
        "import pathlib\npathlib.Path(__file__).write_text('def f(x):\\n    return 0\\n')\n"
        "def f(x):\n    return x + 1\ndef g():\n    pass\n"
    )
    _, final = _run(pytester, source)
    assert _by_id(final)["test_value"]["status"] == "passed" and _by_id(final)["test_rule"]["status"] == "passed"


def test_idle_without_options(pytester: pytest.Pytester) -> None:
    """Without --course-report the plugin does nothing and writes nothing."""
    pytester.makepyfile(test_plain="def test_ok():\n    assert sum([1, 2]) == 3\n")
    result = pytester.runpytest("-p", "course.engine.child.plugin")
    result.assert_outcomes(passed=1)
    assert not list(Path(pytester.path).glob("*.manifest"))


def test_the_report_is_signed_after_each_check(pytester: pytest.Pytester) -> None:
    """A process that ends in the second check leaves a signed report holding the first check's verdict,
    marked incomplete; a run to the end marks its report complete."""
    _, final = _run(pytester, "import os\ndef f(x):\n    return x + 1\n\ndef g():\n    os._exit(0)\n")
    assert final["complete"] == 0 and [c["id"] for c in final["checks"]] == ["test_value"]
    assert final["checks"][0]["status"] == "passed"
    _, whole = _run(pytester, "def f(x):\n    return x + 1\n\ndef g():\n    pass\n")
    assert whole["complete"] == 1 and len(whole["checks"]) == 3


def test_the_output_is_marked_between_checks(pytester: pytest.Pytester) -> None:
    """What each check printed lies between the notary's marks, which learner code cannot write: printing
    a lookalike mark does not move any of it to another check."""
    import subprocess

    from course.engine.parent.output import OutputSink

    fake = "\x1efake:2\x1e"
    source = f"def f(x):\n    print('in f', {fake!r})\n    return x + 1\n\ndef g():\n    print('in g')\n"
    pytester.makepyfile(test_grader=GRADER)
    learner = pytester.path / "learner" / "sub.py"
    learner.parent.mkdir()
    learner.write_text(source)
    out = pytester.path / "report" / "report.json"
    out.parent.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "course.engine.child.plugin", "-q", "-s",
                           "--course-report", str(out), "--course-submission", str(learner), "test_grader.py"],
                          cwd=pytester.path, capture_output=True, timeout=600, check=False)
    sink = OutputSink(io.BytesIO(done.stdout), report.output_marker(b""))
    sink.join()
    assert sink.checks() == {0: f"in f {fake}\n", 1: "in g\n"}
    assert "in f" in sink.text() and report.output_marker(b"") not in sink.text().encode()


def test_a_first_report_is_written_before_any_check(pytester: pytest.Pytester) -> None:
    """A process that ends at the import of the learner's file still leaves a signed report, with no check in
    it: from the manifest on, a report that is missing or empty was removed or emptied, never not yet written."""
    _, final = _run(pytester, "import os\nos._exit(0)\n")
    assert final["complete"] == 0 and final["checks"] == [] and final["served"] == 0


def _lazy_course_imports(module: str) -> set[str]:
    """The `course` modules that `module` imports inside its functions."""
    import ast
    import importlib
    import types

    path = Path(str(importlib.import_module(module).__file__))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in top and (node.module or "").startswith("course."):
            # `from course.engine.wire import wire` imports the module course.engine.wire.wire
            package = importlib.import_module(str(node.module))
            found |= {f"{node.module}.{a.name}" for a in node.names
                      if isinstance(getattr(package, a.name, None), types.ModuleType)} or {str(node.module)}
    return found


def test_answering_the_judge_imports_nothing_after_the_snapshot() -> None:
    """Every `course` module that answering the judge imports as it goes (in `serve`, `asks` and the modules
    they reach that way) is loaded by `serve.preload`, which an executor calls before the guard's snapshot:
    one imported later would be outside the guard, and the learner's file could rebind its functions unseen."""
    import subprocess

    seen, todo = set(), ["course.engine.executor.serve", "course.engine.executor.asks"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(_lazy_course_imports(module))
    code = "import sys\nfrom course.engine.executor import serve\nserve.preload()\nprint(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            check=True).stdout.split()
    assert len(seen) > 10 and seen <= set(loaded), seen - set(loaded)


NO_JAX = '''
import sys

def test_no_jax(submission):
    """Nothing imported JAX for a grader that never uses it."""
    assert "jax" not in sys.modules, "JAX was imported"
    assert submission.f(1) == 2
'''

WITH_JAX = '''
import jax.numpy as jnp

def test_set_up_before_any_check(submission):
    """The compile listener and whole cache writes were in place when the grader imported JAX."""
    from jax._src import lru_cache, monitoring
    from course.grading.observe.calls import compiles

    assert getattr(lru_cache.LRUCache.put, "whole_writes", False)
    assert compiles._dispatch in monitoring._event_duration_secs_listeners
    assert submission.f(1) == 2
'''


PLAIN = '''
def test_plain(submission):
    """f doubles."""
    assert submission.f(1) == 2
'''
DOUBLE = "def f(x):\n    return 2 * x\n"
USES_JAX = "import jax.numpy as jnp\n\n\ndef f(x):\n    return int(jnp.asarray(x) * 2)\n"


@pytest.mark.parametrize(("grader", "source"), [(NO_JAX, DOUBLE), (WITH_JAX, DOUBLE), (PLAIN, USES_JAX)],
                         ids=["a grader without JAX", "a grader that imports JAX", "a file that imports JAX itself"])
def test_jax_is_set_up_as_the_grader_imports_it(pytester: pytest.Pytester, grader: str, source: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A grader that never imports JAX grades without paying for its import (a second and more of every grading of
    such an exercise); one that does finds the compile listener and whole cache writes set up by then, before the
    guard's snapshot and any learner code; and a learner's file that imports JAX where its grader does not still
    grades (JAX is set up as it loads, under the armed guard)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # as a grading runs: no plugin of this machine's
    _, final = _run(pytester, source, grader=grader)
    assert [(c["status"], c["message"]) for c in final["checks"]] == [("passed", "")], final["checks"]
