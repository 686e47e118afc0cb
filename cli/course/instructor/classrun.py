"""The state of one `course grade` run: its students, their records and jobs, and what it tells a watcher.

`course.instructor.grade` plans and runs it; `course.instructor.gradebook` adds it up;
`course.instructor.merge` builds one from the shards of a class graded in pieces.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.engine.contain import protections
from course.instructor import layouts
from course.instructor.context import grading_context
from course.instructor.results import Record, max_points
from course.instructor.submissions import Entry
from course.progress import now_iso
from course.registry import Course, Exercise

RESULTS = "results.json"


@dataclass
class Student:
    """One student of the run: their entry, their records (old and new), and the jobs still to run."""

    entry: Entry
    records: dict[str, Record]
    pending: int = 0
    graded: bool = False
    """True when something of theirs was graded in this run (not all reused), or they are new."""
    changed: bool = False
    """True when their results file must be written (graded, or a record changed without grading)."""
    written: bytes = b""
    """What this run wrote to their results file, to restore it if anything changed it since."""
    started: float | None = None
    ended: float | None = None
    unreadable: list[str] = field(default_factory=list)
    """What their entry holds that could not be read (a damaged zip, at any depth), one sentence each."""

    @property
    def error(self) -> bool:
        """True when the platform failed on one of their exercises."""
        return any(r.status == "error" for r in self.records.values())

    @property
    def note(self) -> str:
        """What the gradebook says beside their row: what the platform failed on, if anything."""
        failed = [name for name, r in self.records.items() if r.status == "error"]
        notes = [f"the platform failed on {', '.join(failed)}; grade again"] if failed else []
        if self.unreadable:
            notes.append(f"not all of it could be read: {'; '.join(self.unreadable)}")
        return "; ".join(notes)

    @property
    def wall_s(self) -> float | None:
        """Seconds from their first grading's start to their last one's end in this run."""
        return None if self.started is None or self.ended is None else self.ended - self.started


@dataclass(frozen=True)
class Job:
    """One exercise of one student to grade, with the bytes of the submitted file."""

    student: Student
    exercise: Exercise
    rel: str
    data: bytes
    note: str = ""


class Listener:
    """What a run tells the one watching it (the progress display); every method does nothing here."""

    def warming(self, references: int) -> None:
        """The reference solutions are graded first, to fill the shared compilation cache."""

    def reference(self, exercise: str, seconds: float) -> None:
        """One reference solution was graded in `seconds`."""

    def graded(self, job: Job, rec: Record) -> None:
        """One job ended."""

    def finished(self, student: Student) -> None:
        """Every job of a student ended (or none was needed)."""


@dataclass
class ClassRun:
    """A whole `course grade` run: what was asked, and every student's records at the end."""

    course: Course
    out: Path
    exercises: list[Exercise]
    seed: int
    protections: protections.Protections
    students: list[Student] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    references: dict[str, str] = field(default_factory=dict)
    """How each reference solution fared under the class's seed (kept across runs while its grader stands)."""
    bad: list[layouts.BadEntry] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    layout: str = "folders"
    single: Path | None = None
    """Where the results go when the run grades one submission (the Gradescope autograder)."""
    started: float = field(default_factory=time.monotonic)
    generated_at: str = field(default_factory=now_iso)
    capacity: dict[str, Any] = field(default_factory=dict)
    """The CPUs, memory limit and gradings at once this run used, and what one grading was seen to need."""
    counted: tuple[int, int] | None = None
    """(graded now, reused) when they come from elsewhere: the shards of a merged class."""
    stopped: threading.Event = field(default_factory=threading.Event)
    """Set when the run is being stopped (a signal, a crash): from then on no grading is a verdict."""

    def results_path(self, student: str) -> Path:
        """Where a student's `results.json` is written."""
        return self.single if self.single is not None else self.out / student / RESULTS

    @property
    def exit_code(self) -> int:
        """0 when every entry was graded; 2 when some could not be (named); 3 when the platform failed."""
        return 3 if any(s.error for s in self.students) else 2 if self.bad else 0

    def total(self, student: Student) -> float:
        """A student's points over the course's exercises (hidden checks included)."""
        return sum(r.score for name, r in student.records.items() if name in {e.name for e in self.course.exercises})

    @property
    def max_total(self) -> float:
        """What the whole course is worth, hidden checks included."""
        return sum(max_points(e) for e in self.course.exercises)

    @property
    def graded_now(self) -> tuple[int, int]:
        """How many students this run graded, and how many it reused unchanged."""
        if self.counted is not None:
            return self.counted
        return sum(s.graded for s in self.students), sum(not s.graded for s in self.students)

    def tried(self, name: str) -> list[Record]:
        """The records of the students who tried exercise `name` (not tried: no file, or the stub)."""
        return [s.records[name] for s in self.students
                if name in s.records and s.records[name].status != "not_tried"]

    def context(self, student: Student) -> dict[str, Any]:
        """What `extra_data` says about the grading itself and the entry."""
        entry = student.entry
        return {**grading_context(self.course, student=entry.student, seed=self.seed, protections=self.protections),
                "entry": entry.label, "name": entry.name, "members": list(entry.members),
                **({"unreadable": list(student.unreadable)} if student.unreadable else {})}
