"""The learner's own line, quoted in a message: `line 13: acc_ref[...] += jnp.dot(x, y)`."""

from __future__ import annotations

import linecache
from pathlib import Path

__all__ = ["quote_line"]

# A quoted line longer than this is cut, so one long expression does not swamp the message.
MAX_QUOTE = 100


def quote_line(path: Path | str | None, line: int | None) -> str:
    """'line 13: acc_ref[...] += ...' from the learner's file, 'line 13' without its text, '' without a line."""
    if line is None:
        return ""
    text = ""
    if path is not None:
        linecache.checkcache(str(path))  # the file may have changed since it was last read
        text = linecache.getline(str(path), line).strip()
    if len(text) > MAX_QUOTE:
        text = text[: MAX_QUOTE - 3] + "..."
    return f"line {line}: {text}" if text else f"line {line}"
