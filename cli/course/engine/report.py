"""The report a grading process writes and the parent verifies: schema, signing, tamper guard.

The plugin writes two signed files: a manifest of the expected checks, written after collection
and before any learner code runs, and the final report. The parent accepts a report only when
both verify against the key it sent through a pipe and every expected check is present.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from course import signing
from course.files import write_atomic

FORMAT = 1


@dataclass
class Check:
    """One check's outcome as the plugin saw it."""

    id: str
    title: str
    status: str = "error"
    score: float = 0.0
    max_score: float = 1.0
    message: str = ""
    duration_s: float = 0.0
    hidden: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for the JSON report."""
        return asdict(self)


class ReportError(Exception):
    """A report that is missing, unreadable or not signed by the key the parent sent."""


def manifest_path(report_path: Path) -> Path:
    """Where the manifest of expected checks lives next to the report."""
    return report_path.with_name(report_path.name + ".manifest")


# The writer binds what it calls when this module is imported (before any learner code runs),
# so replacing `json.dumps`, `course.signing.sign` or the writer later cannot rewrite a report.
def write_signed(
    path: Path,
    key: bytes,
    payload: dict[str, Any],
    _dumps: Any = json.dumps,
    _sign: Any = signing.sign,
    _write: Any = write_atomic,
) -> None:
    """Write `payload` with its signature, atomically."""
    body = _dumps({"format": FORMAT, **payload}, sort_keys=True)
    _write(path, _dumps({"body": body, "signature": _sign(key, body.encode())}))


def read_signed(path: Path, key: bytes) -> dict[str, Any]:
    """Read and verify a signed file; raise ReportError saying what is wrong."""
    try:
        outer = json.loads(path.read_text(encoding="utf-8"))
        body, signature = outer["body"], outer["signature"]
    except FileNotFoundError:
        raise ReportError("missing") from None
    except (OSError, ValueError, KeyError, TypeError):
        raise ReportError("unreadable") from None
    if not isinstance(body, str) or not isinstance(signature, str):
        raise ReportError("unreadable")
    if not signing.verify(key, body.encode(), signature):
        raise ReportError("forged")
    payload = json.loads(body)
    if payload.get("format") != FORMAT:
        raise ReportError("unreadable")
    return payload


# Modules whose functions and classes decide verdicts; replacing any of them is tampering.
_GUARDED_PREFIXES = ("course", "_pytest", "pytest", "pluggy")
# Single modules whose functions graders and the report rely on (not their submodules: JAX and
# NumPy keep internal state in theirs).
_GUARDED_MODULES = ("builtins", "json", "hmac", "hashlib", "numpy", "jax", "jax.numpy")
_GUARDED_CLASSES = (
    "_pytest.reports.BaseReport",
    "_pytest.reports.TestReport",
    "_pytest.runner.CallInfo",
    "_pytest.python.Function",
    "_pytest.main.Session",
    "pluggy._hooks.HookCaller",
    "pluggy._manager.PluginManager",
)


def _guarded_modules() -> list[types.ModuleType]:
    """The loaded modules whose callables the guard watches."""
    modules = []
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (
            name.split(".")[0] in _GUARDED_PREFIXES or name in _GUARDED_MODULES
        ):
            modules.append(module)
    return modules


_Entry = tuple[str, Any, str, object]


def _entries(extra_modules: list[types.ModuleType]) -> list[_Entry]:
    """(label, live namespace, attribute, object) for every callable that matters.

    The namespaces are the live module and class dicts, so comparing is a cheap lookup per
    entry; the objects themselves are kept, not their id()s, since a replaced and freed
    function's id could be reused by its replacement.
    """
    entries: list[_Entry] = [("sys.modules", sys.modules, m.__name__, m) for m in _guarded_modules()]
    for module in [*_guarded_modules(), *extra_modules]:
        mod_name = getattr(module, "__name__", "?")
        namespace = vars(module)
        for attr, value in list(namespace.items()):
            if not callable(value) or attr.startswith("__"):
                continue
            entries.append((f"{mod_name}.{attr}", namespace, attr, value))
            # A class of the platform's own: replacing one of its methods is tampering too.
            if isinstance(value, type) and mod_name.split(".")[0] == "course" and value.__module__ == mod_name:
                _class_entries(entries, f"{mod_name}.{attr}", value)
    for dotted in _GUARDED_CLASSES:
        mod_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(sys.modules.get(mod_name), cls_name, None)
        if isinstance(cls, type):
            _class_entries(entries, dotted, cls)
    return entries


def _class_entries(entries: list[_Entry], prefix: str, cls: type) -> None:
    """Add an entry for each attribute defined on `cls` itself."""
    namespace = vars(cls)
    for attr, value in list(namespace.items()):
        if attr not in ("__dict__", "__weakref__", "__doc__"):
            entries.append((f"{prefix}.{attr}", namespace, attr, value))


class Guard:
    """Identities of the grading machinery's callables, taken before learner code runs."""

    def __init__(self, extra_modules: list[types.ModuleType | None]) -> None:
        self._entries = _entries([m for m in extra_modules if m is not None])

    @classmethod
    def snapshot(cls, extra_modules: list[types.ModuleType | None]) -> Guard:
        """Record every function and class of the guarded modules and of the graders."""
        return cls(extra_modules)

    def changed(self, _sorted: Any = sorted, _missing: object = object()) -> list[str]:
        """Names whose object was replaced or removed since the snapshot: a lookup per name, cheap
        enough to run after every check. The builtins it uses are bound when the class is made,
        before learner code runs, so replacing them cannot blind it."""
        return _sorted({label for label, ns, attr, value in self._entries if ns.get(attr, _missing) is not value})
