"""Replace a library function for the length of a check, including where the learner imported it by name.

A learner may write `pl.pallas_call(...)` or `from jax import jit`; a grader that swaps in an
instrumented version must reach both spellings, and must put everything back afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["replaced"]


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
