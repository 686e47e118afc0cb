"""Where in the learner's file something happened, and what their code raised, in plain words.

Free of JAX: the plugin uses it to explain an exception, graders to point at the learner's line.
"""

from __future__ import annotations

import linecache
import re
import traceback
import types
from collections.abc import Iterator
from pathlib import Path

__all__ = ["callback_error", "code_names", "defined_names", "describe_exception", "learner_frames", "learner_location",
           "learner_traceback", "raised_in", "store_dtypes", "syntax_message"]

REMOTE_FRAMES = "__course_remote_frames__"
"""The local holding a remote exception's learner frames (`course.engine.judge.remote.raise_remote`)."""
# The last line of a Python traceback that JAX copies into the text of a failed host callback.
_RAISED = re.compile(r"^((?:[A-Za-z_][\w.]*)?(?:Error|Exception|SilentWait)): (.+)$", re.MULTILINE)
# What Pallas says, while tracing a kernel, of a store into a ref of another dtype than the value's.
_STORE_DTYPES = re.compile(r"Invalid dtype for `(?:swap|addupdate)`\. Ref dtype: (\w+)\. Value dtype: (\w+)")


def syntax_message(exc: SyntaxError) -> str:
    """A file that does not compile: one sentence, then Python's own lines with the caret under the place."""
    detail = "".join(traceback.format_exception_only(exc)).rstrip()
    return f"your file has a syntax error, so no check can run:\n{detail}"


def raised_in(exc: BaseException) -> str | None:
    """The name of the function in which `exc` was raised (there, for what the learner's code raised in the
    executor of a split grading, which says so), or None without a traceback."""
    remote = getattr(exc, "innermost_function", None)
    if isinstance(remote, str) and remote:
        return remote
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name


def learner_frames(tb: types.TracebackType | None, path: Path | None) -> list[traceback.FrameSummary]:
    """The traceback frames that lie in the learner's file, outermost first."""
    if tb is None or path is None:
        return []
    target = str(path)
    return [f for f in traceback.extract_tb(tb) if f.filename == target] or _remote_frames(tb, target)


def _remote_frames(tb: types.TracebackType | None, target: str) -> list[traceback.FrameSummary]:
    """The learner's frames of an exception their code raised in another process (a split grading's
    executor), kept by the judge in the frame that raised it again (`course.engine.judge.remote`)."""
    while tb is not None:
        kept = tb.tb_frame.f_locals.get(REMOTE_FRAMES)
        if isinstance(kept, list):
            return [f for f in kept if isinstance(f, traceback.FrameSummary) and f.filename == target]
        tb = tb.tb_next
    return []


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
    """'TypeError: message' shortened to one readable line.

    A first line that ends in a colon announces what follows ("..., but:"), so the lines after it
    are joined on rather than cut off.
    """
    text = [line.strip() for line in str(exc).strip().splitlines()]
    first = text[0] if text else ""
    if first.endswith(":"):
        first = " ".join([first, *(line for line in text[1:] if line)])
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def callback_error(exc: BaseException) -> str | None:
    """'IndexError: message' for the exception raised inside a host callback, when `exc` carries one.

    JAX reports a Python exception raised in a callback (the TPU interpreter runs on them) as a
    runtime error whose text holds the callback's traceback; its last exception line is the cause.
    """
    text = str(exc)
    if "callback" not in text.lower() or "Traceback (most recent call last)" not in text:
        return None
    found = _RAISED.findall(text)
    if found and found[-1][0].endswith("SilentWait"):  # the course's own sentence (`silent_waits`), said as it is
        return found[-1][1]
    return f"{found[-1][0]}: {found[-1][1]}" if found else None


def store_dtypes(exc: BaseException) -> tuple[str, str] | None:
    """(the ref's dtype, the value's) when `exc` is Pallas refusing to store a value into a ref of another
    dtype (`Invalid dtype for swap`), such as a float32 product into an accumulator made in bfloat16."""
    found = _STORE_DTYPES.search(str(exc))
    return (found.group(1), found.group(2)) if found else None


# Code objects Python makes for comprehensions: never a function a learner would jit.
_NOT_FUNCTIONS = frozenset({"<module>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


def defined_names(path: Path | str) -> set[str]:
    """Names of every function, lambda and class body written in the file at `path`, read from its graded text.

    A grading puts the text it graded in linecache, so what is read is what ran, even if the file has
    changed since; read in the judge, they are the learner's names without asking their process.
    """
    source = "".join(linecache.getlines(str(path)))
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return set()
    return set(code_names(code)) - _NOT_FUNCTIONS


def code_names(code: types.CodeType) -> Iterator[str]:
    """The name of `code` and of every function or lambda defined inside it."""
    yield code.co_name
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_names(const)
