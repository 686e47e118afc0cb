"""Replace a library function for the length of a check, including where the learner imported it by name.

A learner may write `pl.pallas_call(...)` or `from jax import jit`; a grader that swaps in an
instrumented version must reach both spellings, and must put everything back afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["count_jit_builds", "replaced"]


@contextlib.contextmanager
def replaced(owner: Any, attr: str, replacement: Any, *namespaces: dict[str, Any]) -> Iterator[Any]:
    """Within the block, `owner.attr` and every name bound to it in `namespaces` is `replacement`.

    `namespaces` are module dicts (`vars(module)`, `fn.__globals__`); yields the original object.
    """
    original = getattr(owner, attr)
    rebound = [(ns, name) for ns in namespaces for name, value in list(ns.items()) if value is original]
    setattr(owner, attr, replacement)
    for ns, name in rebound:
        ns[name] = replacement
    try:
        yield original
    finally:
        setattr(owner, attr, original)
        for ns, name in rebound:
            ns[name] = original


@contextlib.contextmanager
def count_jit_builds(path: Path | str | None = None) -> Iterator[list[int]]:
    """Within the block, count the jitted wrappers the learner's code builds, however it reached `jax.jit`.

    `jax.jit`, `from jax import jit`, a `functools.partial(jax.jit, ...)` made at import and the
    decorator-factory form all build their wrapper through one JAX function, which is counted
    here when the code asking for it lies in the file at `path` (with no `path`: anywhere
    outside JAX). JAX's own wrappers, such as those eager operations build, do not count.
    Yields a one-element list holding the count so far.
    """
    from jax._src import pjit  # no public home: every jitted wrapper is made by `pjit.make_jit`

    built = [0]
    original = pjit.make_jit
    target = str(path) if path is not None else None

    def counting(*args: Any, **kwargs: Any) -> Any:
        """Count one build asked for by the learner's code, then build as JAX would."""
        if _requested_by(sys._getframe(1), target):
            built[0] += 1
        return original(*args, **kwargs)

    with replaced(pjit, "make_jit", counting):
        yield built


_JIT_FRONTS = tuple(f"jax{os.sep}_src{os.sep}{name}.py" for name in ("api", "pjit", "traceback_util"))


def _requested_by(frame: Any, target: str | None) -> bool:
    """True when the first frame outside JAX's `jit` front ends lies in `target` (or outside JAX)."""
    while frame is not None and frame.f_code.co_filename.endswith(_JIT_FRONTS):
        frame = frame.f_back
    if frame is None:
        return False
    name = frame.f_code.co_filename
    return name == target if target is not None else f"{os.sep}jax{os.sep}" not in name
