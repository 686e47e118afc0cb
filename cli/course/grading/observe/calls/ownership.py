"""Whose jitted function a compile, a run or a traced call is: the learner's, or one of JAX's own.

Eager operations run through jitted functions of JAX's own: `jnp.where` calls a jitted `_where`,
`jnp.pad` a jitted `_pad`, `jnp.clip` is itself jitted, and a primitive applied eagerly (`x[:3]`,
`jnp.ones`) compiles as `jit(dynamic_slice)` or `jit(broadcast_in_dim)`. None of that is the
learner's, even when a name matches one of theirs: a learner's `jax.jit(jnp.add)` compiles as
`jit(add)`, and so does an eager `jnp.add`. A jitted function is JAX's own when it is defined in
JAX and either JAX's own code called it or JAX holds a jit of it at module scope. Pallas is the
exception: an un-jitted `pallas_call` compiles as `jit(wrapped)`, a function of Pallas's, but the
program is the learner's kernel. A learner's jit of a JAX function (`jax.jit(jnp.add)`,
`jax.jit(lax.add)`) called from their code is theirs.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["call_is_jax_helper", "eqn_is_jax_helper", "is_jax_helper"]

_PJIT = f"jax{os.sep}_src{os.sep}pjit.py"
# Frames between a jitted wrapper's caller and its `cache_miss`: JAX's API boundary.
_BOUNDARY = f"jax{os.sep}_src{os.sep}traceback_util.py"
_PALLAS = (f"jax{os.sep}_src{os.sep}pallas{os.sep}", f"jax{os.sep}experimental{os.sep}pallas{os.sep}")
_modules_by_file: dict[str, Any] = {}


def _jax_dir() -> str | None:
    """The folder of the imported `jax` package, ending with a separator."""
    jax = sys.modules.get("jax")
    path = getattr(jax, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if isinstance(path, str) else None


def _in_jax(file: str | None) -> bool:
    """True for a file of JAX itself, Pallas's aside (a learner's kernel program runs there)."""
    root = _jax_dir()
    if not file or root is None or not os.path.abspath(file).startswith(root):
        return False
    return not any(p in file for p in _PALLAS)


def is_jax_helper(name: str, file: str | None, caller: str | None) -> bool:
    """Whether the jitted function `name`, defined in `file` and called from `caller`, is JAX's own.

    It is when it is defined in JAX and JAX's own code called it, or JAX's module holds a jit of
    it under its name (`jnp.clip`, `_where`): then the learner called one of JAX's operations.
    """
    if not _in_jax(file):
        return False
    return _in_jax(caller) or _jitted_at_jax_module_scope(name, str(file))


def _jitted_at_jax_module_scope(name: str, file: str) -> bool:
    """Whether the JAX module of `file` holds, as `name`, a jitted wrapper of a function of that file."""
    module = _module_of(file)
    held = getattr(module, name, None)
    target = getattr(held, "__wrapped__", None)
    code = getattr(target, "__code__", None)
    return callable(getattr(held, "lower", None)) and code is not None and code.co_filename == file


def _module_of(file: str) -> Any:
    """The imported module whose file is `file` (modules JAX loads later are found on a miss)."""
    if file not in _modules_by_file:
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path.startswith(_jax_dir() or "\0"):
                _modules_by_file[path] = module
    return _modules_by_file.get(file)


def call_is_jax_helper(frame: Any = None) -> bool:
    """Whether the jitted call compiling or running now, as the Python stack shows it, is JAX's own.

    The innermost `cache_miss` frame of JAX's jit holds the function being called, and the frame
    past JAX's API boundary is its caller. A compile with no such frame (an AOT `.compile()`) is
    the caller's own.
    """
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "cache_miss" and code.co_filename.endswith(_PJIT):
            fun = frame.f_locals.get("fun")
            target = getattr(fun, "__code__", None)
            if target is None:  # a ufunc, a partial, a jitted object: made into a jit by its caller
                return False
            return is_jax_helper(fun.__name__, target.co_filename, _caller_file(frame.f_back))
        frame = frame.f_back
    return False


def _caller_file(frame: Any) -> str | None:
    """The file of the first frame past JAX's API boundary."""
    while frame is not None and frame.f_code.co_filename.endswith(_BOUNDARY):
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else None


def eqn_is_jax_helper(eqn: Any) -> bool:
    """Whether a traced `jit` equation is a call of one of JAX's own jitted functions (`_where`, `clip`)."""
    debug = getattr(eqn.params.get("jaxpr"), "jaxpr", None)
    src = str(getattr(getattr(debug, "debug_info", None), "func_src_info", "") or "")
    name, _, where = src.partition(" at ")
    file = where.rsplit(":", 1)[0] if where else None
    frames = list(getattr(getattr(eqn.source_info, "traceback", None), "frames", None) or ())
    caller = None
    for i, f in enumerate(frames):  # innermost first: the caller is past `cache_miss` and the boundary
        if f.function_name.endswith("cache_miss") and f.file_name.endswith(_PJIT):
            rest = [g.file_name for g in frames[i + 1:] if not g.file_name.endswith(_BOUNDARY)]
            caller = rest[0] if rest else None
            break
    return is_jax_helper(name, file, caller)
