"""The report a grading process writes and the parent verifies.

The notary inside the grading process (`course.engine.common.notary`) writes two signed files: a
manifest of the expected checks, written after collection and before any learner code runs, and
the report, rewritten after each check (`complete` is 0) and once more at the end (`complete` is
1). The parent accepts a report only when both verify against the key it sent through a pipe; a
pass needs a complete one with every expected check. When a run is stopped or ends early, the
checks an incomplete report holds keep their verdicts. Beside them the plugin keeps a file for
the stack a run writes when it is stopped at a limit (`stack_path`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from course import signing

RUNNING = "running"
"""What a display event says of a check that has just started (never a verdict: the report has those)."""
GONE = ("the process running your code ended during this check, before answering (it was stopped at a limit, "
        "crashed, or your code ended it)")
"""What a judge's check says when the executor went away; the runner may replace it with the limit."""

UNFINISHED = (
    "this check did not run to the end: the grading session stopped before it finished "
    "(did your code close standard output, raise KeyboardInterrupt, or break the process?)"
)

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


def stack_path(report_path: Path) -> Path:
    """Where a grading process writes its threads' stacks when asked (read only after it is stopped)."""
    return report_path.with_name(report_path.name + ".stack")


def output_marker(key: bytes) -> bytes:
    """The fixed start of the marker the notary writes into the output between checks: derived from
    the key, so learner code, which cannot read the key, cannot write one (`course.engine.parent.output`)."""
    return b"\x1e" + signing.sign(key, b"course.output")[:24].encode() + b":"


def read_signed(path: Path, key: bytes) -> dict[str, Any]:
    """Read and verify a signed file; raise ReportError saying what is wrong."""
    try:
        raw = path.read_text(encoding="utf-8")
        if not raw:  # the notary opens the report first and fills it only at the end
            raise FileNotFoundError(path)
        outer = json.loads(raw)
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
