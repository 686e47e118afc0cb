"""Loading a learner's file by path, and describing what their code did in plain words."""

from __future__ import annotations

import hashlib
import linecache
import sys
import traceback
import types
from pathlib import Path


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


def learner_frames(tb: types.TracebackType | None, path: Path | None) -> list[traceback.FrameSummary]:
    """The traceback frames that lie in the learner's file, outermost first."""
    if tb is None or path is None:
        return []
    target = str(path)
    return [f for f in traceback.extract_tb(tb) if f.filename == target]


def learner_traceback(tb: types.TracebackType | None, path: Path | None) -> str:
    """The traceback trimmed to the learner's own file."""
    frames = learner_frames(tb, path)
    return "".join(traceback.format_list(frames)).rstrip()


def learner_location(tb: types.TracebackType | None, path: Path | None) -> str:
    """' at name.py line N: `code`' for the innermost learner frame, or ''."""
    frames = learner_frames(tb, path)
    if not frames:
        return ""
    frame = frames[-1]
    code = f": `{frame.line.strip()}`" if frame.line else ""
    return f" at {Path(frame.filename).name} line {frame.lineno}{code}"


def describe_exception(exc: BaseException) -> str:
    """'TypeError: message' shortened to one readable line."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def check_seed(run_seed: int, check_id: str) -> int:
    """A per-check seed derived from the run's seed, stable across processes."""
    digest = hashlib.sha256(f"{run_seed}:{check_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
