"""An inspection's observation: written by a section's check, read by the parent as its signed message names it.

The check (`course.engine.child.inspect_sections`) writes the file and ends with a message naming it and its
digest; the notary signs that message, so the parent (`course.engine.parent.inspection`) reads an observation
only if the file it finds is the one the check wrote.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

TAG = "course-inspect"
"""The first word of the message that carries an observation's file name and digest."""


def write_observation(folder: Path, section: dict[str, Any], report: dict[str, Any]) -> str:
    """Write one section's report; return the message that names it and its digest."""
    data = json.dumps(report, default=str).encode("utf-8")
    name = f"section-{int(section['index'])}.json"
    (folder / name).write_bytes(data)
    return f"{TAG} {name} sha256={hashlib.sha256(data).hexdigest()}"


def read_observation(folder: Path, message: str) -> dict[str, Any] | None:
    """The report a section's signed message names, if the file holds exactly what was signed; else None.

    The parent calls this; a message that names no observation raises ValueError.
    """
    tag, name, digest = (message.split(" ") + ["", "", ""])[:3]
    if tag != TAG or not name.startswith("section-") or "/" in name or not digest.startswith("sha256="):
        raise ValueError("not an observation")
    try:
        data = (folder / name).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != digest.removeprefix("sha256="):
        return None
    return json.loads(data)  # type: ignore[no-any-return]
