"""A learner's own runs: where JAX has no TPU, every Pallas kernel runs in the strict TPU interpreter, as graded.

A learner's file passes no `interpret=`, so that it compiles on a TPU; on a CPU, JAX then refuses to run
its kernels ("Only interpret mode is supported on CPU backend"). `course run SCRIPT` and `%load_ext course`
call `interpret_where_no_tpu()` before the learner's code runs: it sets JAX's global Pallas mode, which
overrides any `interpret=` a `pallas_call` is given, to the strict interpreter's parameters, made to
decide *at the first kernel* whether to apply. JAX asks the mode's truth there (`mode or interpret`), so
the question "is there a TPU?" is put only once the script has set its platforms, device count or
distributed run up, and a TPU compiles the kernels as written. Nothing here is imported by other commands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["interpret_as_written", "interpret_where_no_tpu", "no_tpu"]


def no_tpu() -> bool:
    """Whether JAX, as this process has set it up, has no TPU to run on (it starts JAX's backends if need be)."""
    import jax

    return jax.default_backend() != "tpu"


def interpret_where_no_tpu(announce: Callable[[], None] | None = None) -> None:
    """From now on, in this process, run every kernel in the strict TPU interpreter if JAX turns out to have no
    TPU; `announce` is called once, at the first kernel so interpreted."""
    from jax.experimental.pallas import tpu as pltpu

    pltpu.set_tpu_interpret_mode(_params_class()(announce=announce))


def interpret_as_written() -> None:
    """Undo `interpret_where_no_tpu`: kernels run as their own `interpret=` says again (a mode someone else set
    is left alone)."""
    from jax._src import config  # the global mode's own getter has no public home

    mode = config.pallas_tpu_interpret_mode_context_manager
    if isinstance(mode.get_global(), _params_class()):
        mode.set_global(None)


@functools.cache
def _params_class() -> type:
    """`pltpu.InterpretParams` (the strict defaults) that is true only where JAX has no TPU."""
    import dataclasses

    from jax.experimental.pallas import tpu as pltpu

    @dataclasses.dataclass(frozen=True)
    class WhereNoTpu(pltpu.InterpretParams):  # type: ignore[misc]
        """The strict interpreter's parameters, in force only where JAX has no TPU."""

        announce: Any = dataclasses.field(default=None, compare=False, repr=False)

        def __bool__(self) -> bool:
            """True where JAX has no TPU: JAX then interprets the kernel with these parameters."""
            if not no_tpu():
                return False
            announce = self.announce
            if announce is not None:
                object.__setattr__(self, "announce", None)  # said once, at whichever kernel asks first
                announce()
            return True

        def __repr__(self) -> str:
            """As `InterpretParams` prints, which is what runs."""
            return "InterpretParams" + super().__repr__()[len(type(self).__qualname__):]

    return WhereNoTpu
