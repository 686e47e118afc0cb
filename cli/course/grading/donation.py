"""Buffer donation: consumed inputs, the jitted functions of a submission, real aliasing, warnings.

On the CPU, a donated input that XLA reuses is deleted as soon as the call is dispatched, so
`x.is_deleted()` tells whether the caller's array was consumed. A request to donate is not
proof of reuse (an f32 input and an f16 output cannot share), so the real test of aliasing is
`compiled.memory_analysis().alias_size_in_bytes`.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from course.grading.feedback import fail

__all__ = [
    "NOT_USABLE_WARNING",
    "DonationInfo",
    "WarningsCall",
    "alias_bytes",
    "assert_consumed",
    "assert_not_consumed",
    "call_recording_warnings",
    "donation_info",
    "is_consumed",
    "is_deleted_error",
    "jitted_functions",
]

NOT_USABLE_WARNING = "Some donated buffers were not usable"


def is_consumed(x: Any) -> bool:
    """True when `x` is a jax.Array whose buffer is gone (donated or deleted)."""
    return isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.is_deleted()


def assert_consumed(x: Any, name: str, hint: str | None = None) -> None:
    """Fail unless the call consumed `x` (its buffer was donated and reused)."""
    if not is_consumed(x):
        fail(hint or (f"`{name}` is still alive after the call: its buffer was not donated. "
                      "Did you copy it, or donate the wrong argument?"))


def assert_not_consumed(x: Any, name: str, hint: str | None = None) -> None:
    """Fail if the call consumed `x`, which the caller still needs."""
    if is_consumed(x):
        fail(hint or (f"`{name}` was consumed by the call: its buffer was donated, so the caller "
                      "can no longer read it. Donate only the arguments the caller gives up."))


def is_deleted_error(exc: BaseException) -> bool:
    """True when `exc` is JAX refusing to read or pass an array whose buffer was donated."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and "has been deleted" in text:
        return True  # reading a donated array: "Array has been deleted with shape=..."
    # Passing it to a jitted call again: a plain ValueError "Buffer has been deleted or donated".
    return isinstance(exc, ValueError | RuntimeError) and "deleted or donated" in text


def jitted_functions(module: types.ModuleType) -> dict[str, Any]:
    """The module-level objects made by `jax.jit`, by their names in the module, in order.

    Covers `f = jax.jit(g, ...)`, `@jax.jit` and `@functools.partial(jax.jit, ...)` alike,
    since all of them leave a jitted wrapper in the module's namespace.
    """
    found: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, jax.stages.Wrapped) and callable(getattr(value, "lower", None)):
            found[name] = value
    return found


def alias_bytes(jitted: Any, *args: Any, **kwargs: Any) -> int:
    """Bytes of input buffers that the compiled `jitted(*args)` reuses for its outputs.

    Arguments may be arrays (they are not consumed) or `jax.ShapeDtypeStruct`s.
    """
    compiled = jitted.lower(*args, **kwargs).compile()
    analysis = compiled.memory_analysis()
    return int(getattr(analysis, "alias_size_in_bytes", 0) or 0)


@dataclass(frozen=True)
class DonationInfo:
    """What a jitted function asks for and what its compiled form does, for one input signature."""

    donate_argnums: tuple[int, ...]
    alias_bytes: int
    out_info: Any
    """The outputs' shapes and dtypes, as `jax.ShapeDtypeStruct` leaves."""


def donation_info(jitted: Any, *args: Any, **kwargs: Any) -> DonationInfo:
    """Lower and compile `jitted` for `args`: its requested donations and its real aliasing."""
    lowered = jitted.lower(*args, **kwargs)
    analysis = lowered.compile().memory_analysis()
    return DonationInfo(
        donate_argnums=tuple(lowered.donate_argnums),
        alias_bytes=int(getattr(analysis, "alias_size_in_bytes", 0) or 0),
        out_info=lowered.out_info,
    )


@dataclass(frozen=True)
class WarningsCall:
    """The result of a call and the warnings it raised."""

    result: Any
    warnings: list[warnings.WarningMessage]

    @property
    def not_usable(self) -> list[str]:
        """The texts of JAX's "Some donated buffers were not usable" warnings, first line each."""
        texts = (str(w.message) for w in self.warnings)
        return [t.splitlines()[0] for t in texts if NOT_USABLE_WARNING in t]


def call_recording_warnings(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> WarningsCall:
    """Call `fn`, recording every warning it raises (JAX warns about donation only on a first compile)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return WarningsCall(result=result, warnings=list(caught))
