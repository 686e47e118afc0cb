"""`devices = N` in exercise.toml gives that grader exactly N CPU devices, cold or forked from the warm worker,
and the next grading in the same worker gets its own count again; every grading compiles with XLA's faster
CPU emitters when the installed jaxlib is one known to accept the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.parent import invocation
from course.engine.parent.runner import grade, grade_many, start_worker
from course.registry import load_course

GRADER = '''
import os

import jax
import jax.numpy as jnp

def test_devices(submission):
    """The grader sees exactly the devices its exercise asks for."""
    assert jax.device_count() == submission.WANT, f"saw {jax.device_count()} devices, wanted {submission.WANT}"

def test_compiles_with_the_fast_emitters():
    """The grading's XLA was given the fast-compile flag, and accepts it: a program compiles and runs."""
    assert "FAST_COMPILE" in os.environ["XLA_FLAGS"].split(), os.environ["XLA_FLAGS"]
    text = jax.jit(jnp.tanh).lower(jnp.ones(8)).compile().as_text()
    assert "wrapped_" not in text, "a single operation is still wrapped in a fusion: the flag had no effect"
    assert float(jax.jit(lambda x: jnp.tanh(x) + 1)(jnp.zeros(8)).sum()) == 8.0
'''.replace("FAST_COMPILE", invocation.FAST_COMPILE)


def _course(root: Path) -> Path:
    """A course of three exercises asking for 8, 1 and 2 devices."""
    wants = {"eight": 8, "one": 1, "two": 2}
    lines = ['format_version = 1', 'title = "Devices"', f"exercises = {list(wants)!r}".replace("'", '"')]
    (root / "course.toml").write_text("\n".join(lines) + "\n")
    for i, (name, n) in enumerate(wants.items(), start=1):
        folder = f"{i:02d}_{name}"
        for top in ("exercises", "graders", "solutions"):
            (root / top / folder).mkdir(parents=True)
        (root / "exercises" / folder / "exercise.toml").write_text(
            f'title = "{name}"\ntopic = "devices"\nhints = ["h"]\ndevices = {n}\n')
        (root / "exercises" / folder / f"{name}.py").write_text(f"WANT = {n}\n")
        (root / "graders" / folder / f"test_{name}.py").write_text(GRADER)
    return root


@pytest.mark.slow
def test_each_path_sees_exactly_the_devices_asked_for(tmp_path: Path) -> None:
    """Cold: 8 and 1. Warm worker, in one worker and in this order: 8, then 1, then 2."""
    (tmp_path / "course").mkdir()
    course = load_course(_course(tmp_path / "course"))
    eight, one, two = course.exercises
    cold = [grade(e, e.stub_path) for e in (eight, one)]
    assert all(r.passed for r in cold), [c.message for r in cold for c in r.checks]
    worker = start_worker()
    assert worker is not None
    try:
        warm = grade_many([(e, e.stub_path) for e in (eight, one, two)], jobs=1, worker=worker)
        assert worker.launched == 3, f"only {worker.launched} of 3 gradings were forked: {worker.reason}"
        assert worker.status()["backends"] == [], "the worker itself must never start a backend"
    finally:
        worker.close()
    assert all(r.passed for r in warm), [c.message for r in warm for c in r.checks]


def test_the_fast_compile_flag_is_given_only_to_a_jaxlib_known_to_accept_it(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """XLA aborts at start-up on a flag it does not know: another jaxlib release grades without it."""
    (tmp_path / "course").mkdir()
    eight = load_course(_course(tmp_path / "course")).exercises[0]
    pinned = invocation.environment(eight, None)["XLA_FLAGS"].split()
    assert pinned == ["--xla_force_host_platform_device_count=8", invocation.FAST_COMPILE]
    monkeypatch.setattr(invocation, "jaxlib_version", lambda: "0.11.0")
    assert invocation.environment(eight, None)["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=8"]
    monkeypatch.setattr(invocation, "jaxlib_version", lambda: "")
    assert invocation.FAST_COMPILE not in invocation.environment(eight, None)["XLA_FLAGS"]


def test_the_jaxlib_version_is_what_its_metadata_says(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Read from the name of jaxlib's `.dist-info` folder, the version is the one importlib.metadata gives; an
    import path with no such folder asks importlib.metadata."""
    from importlib import metadata

    invocation.jaxlib_version.cache_clear()
    assert invocation.jaxlib_version() == metadata.version("jaxlib")
    invocation.jaxlib_version.cache_clear()
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    try:
        assert invocation.jaxlib_version() == ""
    finally:
        invocation.jaxlib_version.cache_clear()
