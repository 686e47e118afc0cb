"""The barrier the notary puts up once checks are about to run: the primitives that break isolation, refused.

It is an audit hook of its own, which holds nothing secret (a refusal's traceback may show its
frame), and binds what it calls when it is made, so replacing a built-in later cannot blind it.
Each refusal is reported to the notary as tampering, through the `tell` it is given (the
notary's `notify`). It also knows which code may stand on the stack when a verdict is given,
and makes sure no function borrows that code. `course.engine.common.notary` says why each matters.
"""

from __future__ import annotations

import os
import signal
import sys
import types
from collections.abc import Callable
from pathlib import PosixPath, PurePosixPath
from typing import Any

# Events that would let code see the notary at work, or act in its place.
REFUSED = {
    "gc.get_objects": "walked the garbage collector's objects (gc.get_objects)",
    "gc.get_referrers": "walked the garbage collector's referrers (gc.get_referrers)",
    "gc.get_referents": "walked the garbage collector's referents (gc.get_referents)",
    "sys._current_frames": "read other threads' frames (sys._current_frames)",
    "sys.settrace": "set a trace function (sys.settrace)",
    "sys.setprofile": "set a profile function (sys.setprofile)",
    "sys.addaudithook": "added an audit hook (sys.addaudithook)",
}
CTYPES_EVENTS = frozenset({
    "ctypes.addressof", "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.create_string_buffer",
    "ctypes.create_unicode_buffer", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.get_errno",
    "ctypes.get_last_error", "ctypes.seh_exception", "ctypes.set_errno", "ctypes.set_last_error", "ctypes.string_at",
    "ctypes.wstring_at", "ctypes.PyObj_FromPtr",
})
"""Every audit event `ctypes` raises (CPython 3.11): each is a way to raw memory."""
PATH_EVENTS = frozenset({"open", "os.rename", "os.remove", "os.rmdir", "os.link", "os.symlink", "os.truncate",
                         "os.chmod", "os.chown", "os.mkdir", "os.utime", "shutil.rmtree", "shutil.move",
                         "shutil.copyfile"})


TRUSTED_MODULES = ("_pytest", "pytest", "pluggy", "course.engine")
"""Packages whose code may be on the stack, between pytest's entry and the plugin, when a verdict is given."""


_NOTED: dict[str, tuple[types.ModuleType, frozenset[types.CodeType]]] = {}
"""Each trusted module's code objects, noted by a warm worker before it forks its gradings."""


def note_trusted_codes(prefixes: tuple[str, ...] = TRUSTED_MODULES) -> None:
    """Note the code objects of the trusted modules loaded now, so that a grading forked later walks
    only the modules loaded since (walking them all is a tenth of its start-up)."""
    for name, module in _trusted_modules(prefixes):
        _NOTED[name] = (module, _module_codes(module))


def trusted_codes(prefixes: tuple[str, ...] = TRUSTED_MODULES) -> frozenset[types.CodeType]:
    """Every code object of the loaded modules under `prefixes`, nested ones (lambdas, inner
    functions) included: what may run on pytest's stack when a verdict is given. A frame is
    trusted by the identity of its code, which learner code can neither forge nor borrow
    (building a function from one of these is refused once armed). A module noted before the
    fork (`note_trusted_codes`) is read from the note when it is still the module loaded."""
    found: set[types.CodeType] = set()
    for name, module in _trusted_modules(prefixes):
        noted = _NOTED.get(name)
        found.update(noted[1] if noted is not None and noted[0] is module else _module_codes(module))
    return frozenset(found)


def _trusted_modules(prefixes: tuple[str, ...]) -> list[tuple[str, types.ModuleType]]:
    """The loaded modules under `prefixes`, with their names."""
    inside = tuple(p + "." for p in prefixes)
    return [(name, module) for name, module in list(sys.modules.items())
            if isinstance(module, types.ModuleType) and (name in prefixes or name.startswith(inside))]


def _module_codes(module: types.ModuleType) -> frozenset[types.CodeType]:
    """The code objects of one module's functions and classes, nested ones included."""
    found: set[types.CodeType] = set()
    for value in list(vars(module).values()):
        _add_codes(value, found, depth=2)
    return frozenset(found)


def _add_codes(value: Any, found: set[types.CodeType], depth: int) -> None:
    """Add the code objects a function, method or class holds, and those nested in them."""
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    if isinstance(value, property):
        for accessor in (value.fget, value.fset, value.fdel):
            _add_codes(accessor, found, depth)
        return
    if isinstance(value, types.FunctionType):
        _nested(value.__code__, found)
    elif isinstance(value, type) and depth > 0:
        for member in list(vars(value).values()):
            _add_codes(member, found, depth - 1)


def _nested(code: types.CodeType, found: set[types.CodeType]) -> None:
    """`code` and every code object among its constants, recursively."""
    if code in found:
        return
    found.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _nested(const, found)


def arm(report_dir: str, guarded: tuple[str, ...], trusted: frozenset[types.CodeType], tell: Callable[..., None],
        _addaudithook: Any = sys.addaudithook) -> None:
    """Install the guard hook and take away the means of installing signal handlers."""
    _addaudithook(_make_guard(report_dir, guarded, trusted, tell))
    refuse = _refused_signal(tell)
    signal.signal = refuse
    import _signal

    _signal.signal = refuse


def _refused_signal(tell: Callable[..., None]) -> Callable[..., Any]:
    """What `signal.signal` becomes once armed: a handler could run inside the notary's frame."""

    def signal_refused(signalnum: Any, handler: Any, _tell: Any = tell) -> Any:
        """Refuse, and say so as tampering."""
        _tell("course.tamper", "your code installed a signal handler while checks ran (signal.signal)")
        raise PermissionError("course: signal handlers cannot be installed while your code is graded")

    return signal_refused


def _make_guard(report_dir: str, guarded: tuple[str, ...], trusted: frozenset[types.CodeType],
                tell: Callable[..., None]) -> Callable[[str, tuple], None]:
    """The guard hook: refuses the primitives that break isolation. It holds nothing secret, and
    binds what it calls now, so replacing a built-in later cannot blind it."""
    realpath, fspath, _type, _str, _bytes, _len = os.path.realpath, os.fspath, type, str, bytes, len
    fn_type, path_types = types.FunctionType, (PosixPath, PurePosixPath)
    permission, runtime = PermissionError, RuntimeError
    inside = report_dir.rstrip("/") + "/"
    refused, paths = dict(REFUSED), PATH_EVENTS
    ctypes_events = CTYPES_EVENTS
    watched = frozenset(refused) | paths | ctypes_events | {"object.__setattr__", "function.__new__"}

    def refuse(what: str, error: type[BaseException] = permission) -> None:
        """Report `what` as tampering and make the operation fail."""
        tell("course.tamper", "your code " + what)
        raise error("course: refused while your code is graded: it " + what)

    def sensitive(path: Any) -> str:
        """What a path would reach that it must not, or ''."""
        kind = _type(path)
        if kind in path_types:
            path, kind = fspath(path), _str  # pathlib's own classes; a descriptor is left alone
        if kind is not _str and kind is not _bytes:
            return ""
        name = path.decode(errors="replace") if kind is _bytes else path
        if "/proc/" in name or name.startswith(inside[:-1]) or ".." in name or not name.startswith("/"):
            name = realpath(name)
        if name.startswith(inside) or name == inside[:-1]:
            return "touched the folder of the grading report"
        if (name.startswith("/proc/") and name.endswith("/mem")) or name in ("/dev/mem", "/dev/kmem"):
            return "opened raw memory (" + name + ")"
        return ""

    def hook(event: str, args: tuple) -> None:
        """Refuse what breaks isolation; let everything else through untouched."""
        if event not in watched:  # nearly every event: one set lookup, then back to work
            return
        if event in refused:
            refuse(refused[event], runtime if event == "sys.addaudithook" else permission)
        if event in ctypes_events:
            refuse("used ctypes (" + event + "), which reads and writes raw memory")
        if event == "function.__new__":
            if args and args[0] in trusted:
                refuse("built a function from the grading machinery's own code (types.FunctionType)")
            return
        if event == "object.__setattr__":
            target, name, value = args[0], args[1], args[2] if _len(args) > 2 else None
            if _type(target) is not fn_type or name not in ("__code__", "__defaults__", "__kwdefaults__"):
                return
            if target.__code__.co_filename.startswith(guarded):
                refuse("rewrote " + name + " of a function of the grading machinery in place")
            if name == "__code__" and value in trusted:
                refuse("gave a function the grading machinery's own code (__code__)")
            return
        for path in args[:2] if event in ("os.rename", "os.link", "os.symlink", "shutil.move") else args[:1]:
            problem = sensitive(path)
            if problem:
                refuse(problem)

    return hook
