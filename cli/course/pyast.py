"""`ast.parse` behind one lock, for the parent's threads.

CPython 3.11 before 3.11.9 keeps the depth of the AST it is building in state the interpreter's
threads share, so two threads that parse at once can fail with `SystemError: AST constructor
recursion depth mismatch` (CPython issue 106905). The parent grades several files at once in
threads (`course.engine.runner.map_jobs`), and each reads a grader's or a learner's source.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


__all__ = ["parse"]
