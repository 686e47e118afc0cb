"""Replace a library function for the length of a check, including where the learner imported it by name.

A learner may write `pl.pallas_call(...)` or `from jax import jit`; a grader that swaps in an
instrumented version must reach both spellings, and must put everything back afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JitBuilds", "count_jit_builds", "jit_builds_per_call", "replaced"]


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


@dataclass(frozen=True)
class JitBuilds:
    """How many jitted wrappers each call of a learner's function built, and what each call was.

    A jit is built once when no call that repeats an earlier call's key builds one, wherever the
    wrapper is then held (a module global, a dict, an object, a factory's closure). A wrapper
    built lazily by the first call, or once per key and kept, is built once; one built by every
    call is not, even when JAX's caches spare it a compile.
    """

    builds: tuple[int, ...]
    keys: tuple[str, ...]
    """Per call, what makes it the same call as another (argument types, a bucket), as a message names it."""

    def repeats(self) -> list[int]:
        """The calls (0-based) that built a wrapper although an earlier call had the same key."""
        seen: set[str] = set()
        found = []
        for i, (built, key) in enumerate(zip(self.builds, self.keys, strict=True)):
            if built and key in seen:
                found.append(i)
            seen.add(key)
        return found

    def message(self, name: str) -> str | None:
        """What was rebuilt, in course terms; None when the jit was built once."""
        repeats = self.repeats()
        if not repeats:
            return None
        if all(self.builds):
            key = self.keys[repeats[0]]
            same = [i for i, k in enumerate(self.keys) if k == key]
            return (f"each of {len(same)} calls of `{name}` with {key} built a new jitted wrapper "
                    f"({sum(self.builds[i] for i in same)} in all): a `jax.jit` made inside the function is a new "
                    "object each time, with caches of its own to look up and fill. Build it once, at import (at "
                    "module scope, in a dict or in an object made at import), and call that.")
        key = self.keys[repeats[0]]
        again = ", ".join(str(i + 1) for i in repeats if self.keys[i] == key)
        built = sum(b for b, k in zip(self.builds, self.keys, strict=True) if k == key)
        return (f"{self.keys.count(key)} calls of `{name}` with {key} built {built} jitted wrappers, again on "
                f"call(s) {again} after an earlier call with {key} had built one: a jit built again is a new "
                "object with empty caches, so it traces and compiles again. Build each one once and keep it "
                "(a dict that never drops an entry, or one jit at module scope).")


def jit_builds_per_call(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *,
                        keys: Sequence[str] | None = None, path: Path | str | None = None) -> JitBuilds:
    """Call `fn(*args)` for each tuple in `calls`, counting the wrappers the file at `path` builds in each.

    `keys` says which calls are the same call (default: the arguments' types, `float32[8,128]`);
    make the arrays before, since donated inputs are consumed by the calls.
    """
    builds = []
    for args in calls:
        with count_jit_builds(path) as built:
            fn(*args)
        builds.append(built[0])
    return JitBuilds(tuple(builds), tuple(keys) if keys is not None else tuple(_types(a) for a in calls))


def _types(args: tuple[Any, ...]) -> str:
    """The arguments' types as JAX writes them: `float32[8,128]`, or `float32[8], float32[8]`."""
    import jax

    return ", ".join(str(jax.typeof(a)) if hasattr(a, "dtype") else repr(a) for a in jax.tree_util.tree_leaves(args))
