"""An exercise named as people type it: its name, number, folder, a path to its folder or file, or dashed.

`course check 1`, `course check 01_update_with_donate`, `course check update-with-donate`,
`course check update_with_donate.py` and a tab-completed `exercises/01_update_with_donate/` (or
the file inside it, absolute or relative) all name one exercise. The text is read, never the
disk: a path names the exercise whose folder or file it ends in, wherever the workspace is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Protocol

_FOLDER = re.compile(r"^(\d{1,3})_([a-z0-9_]+)$")
_NOT_A_NAME = {"exercises", "graders", "solutions", "wrong", "hidden", "readme", "exercise"}


class Named(Protocol):
    """What resolving needs of an exercise."""

    @property
    def name(self) -> str:
        """The exercise's name."""
        ...

    @property
    def position(self) -> int:
        """Its position in the course, from 1."""
        ...


def resolve(exercises: Sequence[Named], token: str) -> Named | None:
    """The exercise `token` names, or None."""
    by_name = {e.name: e for e in exercises}
    text = token.strip()
    if text in by_name:
        return by_name[text]
    if text.isdigit():
        number = int(text)
        return exercises[number - 1] if 1 <= number <= len(exercises) else None
    for part in _candidates(text):
        found = _match(exercises, by_name, part)
        if found is not None:
            return found
    return None


def closest(exercises: Sequence[Named], token: str, n: int = 3) -> list[str]:
    """Names that look like `token`, best first (a typo, a wrong number, a half-remembered name)."""
    import difflib  # imported here: only a wrong name needs it

    names = [e.name for e in exercises]
    parts = _candidates(token.strip()) or [token.strip()]
    words = [_FOLDER.sub(r"\2", _bare(p)) for p in parts]
    found: list[str] = []
    for word in words:
        found += difflib.get_close_matches(word, names, n=n, cutoff=0.6)
        found += [name for name in names if len(word) >= 4 and (word in name or name in word)]
    return list(dict.fromkeys(found))[:n]


def _candidates(text: str) -> list[str]:
    """The pieces of `text` that may name an exercise: for a path, its parts from the last one back."""
    path = PurePath(text.replace("\\", "/"))
    parts = [p for p in reversed(path.parts) if p not in ("/", ".", "..")]
    return [p for p in parts if _bare(p) not in _NOT_A_NAME]


def _bare(part: str) -> str:
    """`update_with_donate` for `update_with_donate.py`, `update-with-donate` or `Update_With_Donate`."""
    for suffix in (".py", ".md", ".toml"):
        if part.endswith(suffix):
            part = part[: -len(suffix)]
    return part.replace("-", "_").lower()


def _match(exercises: Sequence[Named], by_name: dict[str, Named], part: str) -> Named | None:
    """The exercise one path part names: `name`, `name.py`, `name-with-dashes` or `NN_name`."""
    bare = _bare(part)
    if bare in by_name:
        return by_name[bare]
    folder = _FOLDER.match(bare)
    if folder is None:
        return None
    number, name = int(folder.group(1)), folder.group(2)
    if name in by_name:
        return by_name[name]
    # `01_update` (a folder name cut short by tab completion) is its number's exercise
    # only when the name part agrees with that exercise's name.
    if 1 <= number <= len(exercises) and exercises[number - 1].name.startswith(name):
        return exercises[number - 1]
    return None
