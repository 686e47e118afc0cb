"""Loading a learner's file by path, and describing what their code did in plain words."""

from __future__ import annotations

import hashlib
import linecache
import sys
import traceback
import types
from pathlib import Path

from course.grading.source import describe_exception, learner_location, learner_traceback

__all__ = ["SubmissionError", "check_seed", "describe_exception", "learner_location", "load", "read_source"]


class SubmissionError(Exception):
    """The learner's file could not be loaded; the message carries their trimmed traceback."""


def read_source(path: Path) -> bytes | None:
    """The file's bytes, read once at start-up so later edits or deletions change nothing."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def load(path: Path, source: bytes | None) -> types.ModuleType:
    """Execute the learner's source as a fresh module named after the file; raise SubmissionError."""
    if source is None:
        raise SubmissionError(f"your file {path.name} could not be read; run `course reset` to restore the stub")
    name = path.stem
    text = source.decode("utf-8", errors="replace")
    # Tracebacks and JAX's source info read lines through linecache: give it the graded text.
    linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - running the learner's code is the point
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are mistakes too
        sys.modules.pop(name, None)
        raise SubmissionError(_import_message(exc, path)) from None
    return module


def _import_message(exc: BaseException, path: Path) -> str:
    """One sentence and the learner's traceback for a file that fails while being imported."""
    if isinstance(exc, SyntaxError):
        detail = "".join(traceback.format_exception_only(exc)).rstrip()
        return f"your file has a syntax error, so no check can run:\n{detail}"
    if isinstance(exc, SystemExit):
        lead = f"your file called sys.exit({exc.code!r}) while being imported, so no check can run"
    else:
        lead = f"your file raised {describe_exception(exc)} while being imported, so no check can run"
    frames = learner_traceback(exc.__traceback__, path)
    return f"{lead}:\n{frames}" if frames else lead


def check_seed(run_seed: int, check_id: str) -> int:
    """A per-check seed derived from the run's seed, stable across processes."""
    digest = hashlib.sha256(f"{run_seed}:{check_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
