"""The report a grading process writes and the parent verifies: schema, signing, tamper guard.

The plugin writes two signed files: a manifest of the expected checks, written after collection
and before any learner code runs, and the final report. The parent accepts a report only when
both verify against the key it sent through a pipe and every expected check is present.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

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

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for the JSON report."""
        return asdict(self)


class ReportError(Exception):
    """A report that is missing, unreadable or not signed by the key the parent sent."""


def manifest_path(report_path: Path) -> Path:
    """Where the manifest of expected checks lives next to the report."""
    return report_path.with_name(report_path.name + ".manifest")


def _sign(key: bytes, body: bytes) -> str:
    """Hex HMAC-SHA256 of `body`."""
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def write_signed(path: Path, key: bytes, payload: dict[str, Any]) -> None:
    """Write `payload` with its signature, atomically (temporary file, then rename)."""
    body = json.dumps({"format": FORMAT, **payload}, sort_keys=True)
    data = json.dumps({"body": body, "signature": _sign(key, body.encode())})
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
    if not hmac.compare_digest(_sign(key, body.encode()), signature):
        raise ReportError("forged")
    payload = json.loads(body)
    if payload.get("format") != FORMAT:
        raise ReportError("unreadable")
    return payload


# Modules whose functions and classes decide verdicts; replacing any of them is tampering.
_GUARDED_PREFIXES = ("course", "_pytest", "pytest", "pluggy")
_GUARDED_CLASSES = ("_pytest.reports.TestReport", "_pytest.runner.CallInfo", "_pytest.python.Function")


class Guard:
    """Identities of the grading machinery's callables, taken before learner code runs."""

    def __init__(self, extra_modules: list[types.ModuleType | None]) -> None:
        self._extra = [m for m in extra_modules if m is not None]
        self._seen = _identities(self._extra)

    @classmethod
    def snapshot(cls, extra_modules: list[types.ModuleType | None]) -> Guard:
        """Record every function and class of the guarded modules and of the graders."""
        return cls(extra_modules)

    def changed(self) -> list[str]:
        """Names whose object was replaced or removed since the snapshot."""
        now = _identities(self._extra)
        return sorted(name for name, ident in self._seen.items() if now.get(name) != ident)


def _identities(extra_modules: list[types.ModuleType]) -> dict[str, int]:
    """Map 'module.attr' to id() for the callables that matter."""
    seen: dict[str, int] = {}
    modules = [m for name, m in list(sys.modules.items()) if name.split(".")[0] in _GUARDED_PREFIXES]
    modules += extra_modules
    for module in modules:
        for attr, value in list(vars(module).items()):
            if callable(value) and not attr.startswith("__"):
                seen[f"{module.__name__}.{attr}"] = id(value)
    for dotted in _GUARDED_CLASSES:
        mod_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(sys.modules.get(mod_name), cls_name, None)
        for attr, value in vars(cls).items() if cls is not None else ():
            seen[f"{dotted}.{attr}"] = id(value)
    return seen
