"""`ast.parse` behind one lock, for the parent's threads, failing only with SyntaxError.

CPython 3.11 before 3.11.9 keeps the depth of the AST it is building in state the interpreter's
threads share, so two threads that parse at once can fail with `SystemError: AST constructor
recursion depth mismatch` (CPython issue 106905). The parent grades several files at once in
threads (`course.engine.parent.runner.map_jobs`), and each reads a grader's or a learner's source.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


TOO_DEEP = "too deeply nested for Python to compile"
"""The reason given for a source whose nesting exhausts the parser (RecursionError or MemoryError)."""


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, one thread at a time. A source nested too deeply for the
    parser raises SyntaxError like any other source Python cannot compile: every caller already says
    what that means for a learner's file, and none should fail on it as if the platform had."""
    with _LOCK:
        try:
            return ast.parse(source, filename=filename, mode=mode)
        except (RecursionError, MemoryError) as exc:
            raise SyntaxError(f"{TOO_DEEP} ({type(exc).__name__})", (filename, 1, 1, "")) from None


__all__ = ["TOO_DEEP", "parse"]
