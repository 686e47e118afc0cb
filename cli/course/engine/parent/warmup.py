"""What the warm worker does once, before it forks any grading: import what graders need, and check it is safe."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path

# What a grader needs; importing them is most of a cold run's start-up. None starts a backend.
# Every submodule of `course.grading` is imported too (`_warm_up`).
WARM_MODULES = (
    "numpy",
    "pytest",
    "jax",
    "jax.numpy",
    "jax.experimental.pallas",
    "jax.experimental.pallas.tpu",
    "course.engine.child.plugin",
    "course.engine.executor.serve",  # an executor loads it, and what answering the judge imports, before its snapshot
    "course.grading",
    # Loaded by JAX on a grading's first lowering, by pytest's default plugins and config: 60 ms a
    # grading when each child loads them itself.
    "jaxlib.mlir.dialects.mhlo",
    "jaxlib.mlir.dialects.builtin",
    "jaxlib.mlir.extras.meta",
    "jax.experimental.multihost_utils",
    "tomllib",
    "xml.etree.ElementTree",
    "pdb",
)


def _warm_up() -> str:
    """Import what graders need; the reason the worker cannot serve, or ''."""
    import importlib

    try:
        for name in WARM_MODULES:
            importlib.import_module(name)
        from course.grading import SUBMODULES

        for sub in SUBMODULES:
            importlib.import_module(f"course.grading.{sub}")
        from _pytest.config import default_plugins

        for name in default_plugins:
            with contextlib.suppress(ImportError):
                importlib.import_module(f"_pytest.{name}")
        _collect_once()
        _find_plugins()
        from course.engine.common import barrier

        barrier.note_trusted_codes()  # after pytest's own run: the modules it loads are noted too
    except Exception as exc:  # any failure means: grade cold
        return f"importing failed ({type(exc).__name__}: {exc})"
    return _unsafe()


def _find_plugins() -> None:
    """Look for JAX's PJRT plugins once here: each grading's backend start would scan every installed
    package's entry points again. Registering a plugin starts no backend and no thread."""
    from jax._src import xla_bridge  # the step of backend start-up that needs no device count

    find = getattr(xla_bridge, "_discover_and_register_pjrt_plugins", None)
    if callable(find):  # a private function: without it, each grading scans as before
        find()


def _collect_once() -> None:
    """Run one pytest collection of a throw-away test here, so children inherit warm caches.

    pytest's first collection in a process fills Python's subclass-check caches over classes
    that JAX and NumPy have registered by the hundred; done in every child, that cost a tenth
    of a second per grading. No grader is imported here, so children still load theirs afresh.
    """
    import io
    import tempfile

    import pytest

    with tempfile.TemporaryDirectory(prefix="course-warm-") as folder:
        test = Path(folder) / "test_warm.py"
        test.write_text("def test_warm():\n    pass\n", encoding="utf-8")
        args = [str(test), "--collect-only", "-q", "-c", os.devnull, "--rootdir", folder,
                "-p", "course.engine.child.plugin"]
        args += ["-p", "no:cacheprovider", "-p", "no:unraisableexception", "-p", "no:threadexception"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            pytest.main(args)
        sys.modules.pop("test_warm", None)


def _unsafe() -> str:
    """Why forking now would be unsafe (a started JAX backend, threads), or ''."""
    from jax._src import xla_bridge

    if getattr(xla_bridge, "_backends", None):
        return "a JAX backend has started in the worker"
    if threading.active_count() != 1:
        return "the worker runs Python threads"
    return ""
