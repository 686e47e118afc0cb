"""`--roster roster.csv`: who is in the class, so each entry maps to a student id and absentees are listed.

A roster is a CSV file with a header. Its id column is the first of `student_id`, `sid`,
`SIS User ID`, `ID number`, `student`, `id`, `email` or `login` it has (so Canvas's gradebook
export and Moodle's grading worksheet serve as they are); its name column is `name`, `full name`
or `student`. Every identifying column (a header naming an id, a name, an email, a login or a
user) gives aliases: an entry whose id, email or name (in that order) equals one of a row's cells,
case and spacing aside, belongs to that row's student.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from course.errors import UsageError
from course.instructor.submissions import usable_id

ID_COLUMNS = ("student_id", "sid", "sis user id", "id number", "student", "id", "email", "login")
NAME_COLUMNS = ("name", "full name", "student name", "student")
_IDENTIFYING = re.compile(r"\b(id|ids|sid|name|email|e-mail|login|identifier|student|user|username)\b")


def key(text: str) -> str:
    """A cell or a name as it is compared: case, spacing and Unicode composition aside (a name unzipped
    on macOS spells `é` as `e` and an accent)."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@dataclass(frozen=True)
class Student:
    """One row of the roster."""

    id: str
    name: str
    aliases: frozenset[str]


@dataclass(frozen=True)
class Roster:
    """The class as the instructor lists it."""

    path: Path
    students: tuple[Student, ...]

    def match(self, keys: list[str]) -> tuple[Student | None, str]:
        """The student whose row holds the first of `keys` found (strongest first), or None and why."""
        for wanted in (key(k) for k in keys if k):
            rows = [s for s in self.students if wanted in s.aliases]
            if len(rows) == 1:
                return rows[0], ""
            if len(rows) > 1:
                return None, f"matches {', '.join(s.id for s in rows)} in {self.path.name}; make it one student's"
        return None, f"matches no student of {self.path.name}; add them, or rename the entry by their id"


def load(path: Path) -> Roster:
    """Read a roster; a missing, empty or unusable one is a UsageError naming the file and the line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"the roster {path} cannot be read ({exc}); give a CSV file with a header.") from None
    rows = list(csv.reader(text.splitlines()))
    header = [key(h) for h in rows[0]] if rows else []
    id_col = next((header.index(c) for c in ID_COLUMNS if c in header), None)
    if id_col is None:
        raise UsageError(f"the roster {path} has no id column; name one `student_id` (or `sid`, `student`, `id`).")
    name_col = next((header.index(c) for c in NAME_COLUMNS if c in header and header.index(c) != id_col), None)
    identifying = [i for i, h in enumerate(header) if _IDENTIFYING.search(h)]
    students: dict[str, Student] = {}
    for line, row in enumerate(rows[1:], start=2):
        cells = [*row, *[""] * len(header)]
        sid = cells[id_col].strip()
        if not sid or key(sid) == "points possible":  # Canvas's second row holds the points, not a student
            continue
        if not usable_id(sid) or sid in students:
            why = "appears twice" if sid in students else "is not a usable id (letters, digits and _ . @ + -)"
            raise UsageError(f"line {line} of the roster {path}: `{sid}` {why}; fix the roster.")
        aliases = {key(cells[i]) for i in identifying if cells[i].strip()} | {key(sid)}
        aliases |= {a.removeprefix("participant ") for a in aliases}  # Moodle's "Participant 12345"
        students[sid] = Student(sid, cells[name_col].strip() if name_col is not None else "", frozenset(aliases))
    if not students:
        raise UsageError(f"the roster {path} lists no student; one row per student, under a header.")
    return Roster(path, tuple(students.values()))
