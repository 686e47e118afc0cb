"""A class's submissions folder as the platforms export it: one entry per student, and what is not one.

Known layouts, recognised by their names:

- a folder or a `.zip` per student, named by the student's id;
- Gradescope's export: `submission_metadata.yml` at the top and a `submission_<n>` folder per
  submission; the metadata names each folder's submitters (their `:sid:`, `:email:`, `:name:`);
- Moodle's "Download all submissions": `<Full name>_<participant id>_assignsubmission_file_`, a
  folder per student, or (without folders) each file so named with its own name at the end;
- Canvas's "Download submissions": files named `<name>_<user id>_<file id>_<file>`, the name the
  student's sortable name in lower case with every Unicode word character kept (`müllerdana`,
  `张伟`), `_LATE` after it for a late one, `anon_<id>` in its place under anonymous grading, and
  `-<n>` before the extension for a file resubmitted.

A folder that holds nothing but one unpacked export is read as that export; an export found among
students' entries is named and left out. Whatever cannot be an entry (a stray file, a damaged
zip, a name that maps to no student, two entries of one student) becomes a `BadEntry` naming it
and saying why (a damaged zip is still said to be the student it names); the others are graded. An
entry that holds an archive that cannot be read, at any depth, is graded from the rest and is a
`BadEntry` too (`graded`), so that the run says it was not whole (`course.instructor.grade`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.errors import UsageError
from course.instructor.archives import check_zip
from course.instructor.roster import Roster
from course.instructor.submissions import Entry, Source, usable_id

GRADESCOPE_METADATA = "submission_metadata.yml"
_MOODLE = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_assign(?:submission|feedback)_[a-z]+_(?P<rest>.*)$", re.DOTALL)
# Canvas keeps every Unicode word character of the name ([[:word:]]: letters, marks, digits, `_`), so the
# name is whatever comes before the ids; it never holds `_<digits>_`, which Canvas takes out of names.
_CANVAS = re.compile(r"^(?P<name>[^/\\]+?)(?P<late>_late)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<rest>.+)$",
                     re.IGNORECASE | re.DOTALL)
_CANVAS_ANONYMOUS = re.compile(r"^(?P<late>late_)?anon_(?P<id>[a-z0-9]+)_(?P<sub>\d+)_(?P<rest>.+)$",
                               re.IGNORECASE | re.DOTALL)
_RESUBMITTED = re.compile(r"^(?P<stem>.+?)-\d+(?P<ext>\.[^.]+)?$")
_GRADESCOPE_FOLDER = re.compile(r"^submission_\d+$")


@dataclass(frozen=True)
class BadEntry:
    """Something in the submissions folder that cannot be graded, and why, in one sentence."""

    label: str
    reason: str
    student: str = ""
    graded: bool = False
    """The entry was graded but not whole (an archive in it could not be read): its student's row says why."""

    def sentence(self) -> str:
        """`label reason.`"""
        return f"{self.label} {self.reason}."


@dataclass
class _Candidate:
    """An entry before its student id is settled: its sources and every name that may identify it."""

    label: str
    sources: list[Source]
    keys: list[str]
    """Ids, then emails, then names: the strongest first."""
    name: str = ""
    members: list[list[str]] = field(default_factory=list)
    """The keys of the other submitters of a group submission."""
    layout: str = "folders"


@dataclass
class Intake:
    """What a submissions folder holds: the entries to grade, what cannot be graded, who sent nothing."""

    entries: list[Entry]
    bad: list[BadEntry]
    missing: list[tuple[str, str]] = field(default_factory=list)
    """(id, name) of each roster student with no entry."""
    layout: str = "folders"

    def shard(self, k: int, n: int) -> Intake:
        """Every n-th entry and bad entry, counted together in name order, starting at the k-th (1-based)."""
        items = sorted([*self.entries, *self.bad], key=lambda item: item.label)
        mine = {id(item) for i, item in enumerate(items) if i % n == k - 1}
        return Intake([e for e in self.entries if id(e) in mine], [b for b in self.bad if id(b) in mine],
                      self.missing, self.layout)


def read_class(folder: Path, *, out: Path | None = None, roster: Roster | None = None) -> Intake:
    """The class in `folder`: its entries and its bad entries. Only a folder that is not one, or that
    holds nothing, is a UsageError: any one bad entry is named and the others are still graded."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder; give `course grade` the folder holding one entry per student.")
    items = [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")
             and not (out is not None and p.resolve() == out.resolve())]
    if not items:
        raise UsageError(f"{folder} holds no submissions; put one folder or .zip per student there.")
    inner = items[0] if len(items) == 1 and items[0].is_dir() else None
    if inner is not None and not _MOODLE.match(inner.name) and export_kind(inner):
        return read_class(inner, out=out, roster=roster)  # the folder that holds an unpacked export
    bad: list[BadEntry] = []
    metadata, layout = {}, "folders"
    if any(p.name == GRADESCOPE_METADATA for p in items):
        metadata, layout = _gradescope_metadata(folder / GRADESCOPE_METADATA, bad), "Gradescope export"
        items = [p for p in items if p.name != GRADESCOPE_METADATA]
    grouped: dict[str, _Candidate] = {}
    for path in items:
        candidate, why = _candidate(path, metadata)
        if candidate is None:
            bad.append(BadEntry(path.name, why, _owner(path, roster)))
        elif candidate.label in grouped:  # Moodle's and Canvas's flat files: one more file of a student
            grouped[candidate.label].sources += candidate.sources
        else:
            grouped[candidate.label] = candidate
    kinds = {c.layout for c in grouped.values()} - {"folders"}
    layout = layout if layout != "folders" or not kinds else ", ".join(sorted(kinds))
    entries = _settle(list(grouped.values()), roster, bad)
    missing = _missing(entries, bad, roster)
    return Intake(entries, sorted(bad, key=lambda b: b.label), missing, layout)


def _candidate(path: Path, metadata: dict[str, dict[str, Any]]) -> tuple[_Candidate | None, str]:
    """What one item of the folder is: a student's folder or zip, one file of a student, or nothing."""
    moodle = _MOODLE.match(path.name)
    if moodle:
        label = path.name if path.is_dir() else f"{moodle['name']}_{moodle['id']}_assignsubmission_file_"
        keys = [moodle["id"], f"participant {moodle['id']}", moodle["name"]]
        source = Source(path) if path.is_dir() else Source(path, moodle["rest"] or path.name)
        return _Candidate(label, [source], keys, moodle["name"], layout="Moodle"), ""
    if path.is_dir():
        info = metadata.get(path.name)
        if info is not None:
            return _Candidate(path.name, [Source(path)], info["keys"], info["name"], info["members"]), ""
        kind = export_kind(path)
        if kind:
            return None, (f"holds a {kind} export, not one student's files; grade it on its own: "
                          f"`course grade {path}`")
        return _Candidate(path.name, [Source(path)], [path.name]), ""
    canvas = _CANVAS_ANONYMOUS.match(path.name) or _CANVAS.match(path.name)
    if canvas and path.is_file():
        rest = _RESUBMITTED.sub(lambda m: m["stem"] + (m["ext"] or ""), canvas["rest"])
        name = canvas.groupdict().get("name") or ""
        label = f"{name or 'anon'}_{canvas['id']}"
        keys = [canvas["id"], name] if name else [canvas["id"]]
        return _Candidate(label, [Source(path, rest)], keys, name, layout="Canvas"), ""
    if path.is_file() and path.suffix.lower() == ".zip":
        why = check_zip(path)
        return (None, why) if why else (_Candidate(path.name, [Source(path)], [path.stem]), "")
    return None, ("is not a submission: neither a folder nor a .zip, nor a file named as Moodle or Canvas "
                  "name their downloads; remove it or put it in its student's folder")


def export_kind(folder: Path) -> str:
    """The platform whose export `folder` is ('' for none): Gradescope's, with its metadata file, or
    Moodle's or Canvas's, where at least half of what it holds is named as they name their downloads."""
    try:
        names = [p.name for p in folder.iterdir() if not p.name.startswith(".")]
    except OSError:
        return ""
    if GRADESCOPE_METADATA in names:
        return "Gradescope"
    moodle = sum(bool(_MOODLE.match(n)) for n in names)
    canvas = sum(bool(_CANVAS_ANONYMOUS.match(n) or _CANVAS.match(n)) for n in names)
    if max(moodle, canvas) * 2 < len(names) or not names:
        return ""
    return "Moodle" if moodle >= canvas else "Canvas"


def _owner(path: Path, roster: Roster | None) -> str:
    """The student a damaged zip names (its name without `.zip`), so the gradebook says it is theirs."""
    if not (path.is_file() and path.suffix.lower() == ".zip"):
        return ""
    return _identify([path.stem], "", roster)[0] or ""


def _gradescope_metadata(path: Path, bad: list[BadEntry]) -> dict[str, dict[str, Any]]:
    """Per `submission_<n>` folder: its submitters' keys (sid, email, name), from Gradescope's metadata."""
    try:
        import yaml
    except ImportError:
        bad.append(BadEntry(path.name, "is Gradescope's export metadata, which needs PyYAML (the instructor extra: "
                                       "`pip install -e '.[instructor]'`); its folders keep their own names"))
        return {}

    class _Loader(yaml.SafeLoader):
        """PyYAML's safe loader, reading any tag a Ruby exporter writes as plain data."""

    _Loader.add_multi_constructor("!", lambda loader, _tag, node: loader.construct_mapping(node)
                                  if isinstance(node, yaml.MappingNode) else loader.construct_scalar(node)
                                  if isinstance(node, yaml.ScalarNode) else loader.construct_sequence(node))
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        bad.append(BadEntry(path.name, f"could not be read ({type(exc).__name__}); its folders keep their own names"))
        return {}
    found = {}
    for folder, info in (data if isinstance(data, dict) else {}).items():
        people = info.get(":submitters") if isinstance(info, dict) else None
        keyed = [_submitter_keys(p) for p in people or [] if isinstance(p, dict)]
        if keyed:
            found[str(folder)] = {"keys": keyed[0][0], "name": keyed[0][1], "members": [k for k, _ in keyed[1:]]}
    return found


def _submitter_keys(person: dict[str, Any]) -> tuple[list[str], str]:
    """A Gradescope submitter's keys, strongest first, and their name."""
    sid, email, name = (str(person.get(f":{k}") or "").strip() for k in ("sid", "email", "name"))
    return [k for k in (sid, email, name) if k], name


def _settle(candidates: list[_Candidate], roster: Roster | None, bad: list[BadEntry]) -> list[Entry]:
    """Give each candidate its student id (from the roster, or its own strongest usable key); entries
    that map to no student, or to a student another entry has too, become bad entries."""
    chosen: dict[str, list[tuple[_Candidate, str, tuple[str, ...]]]] = {}
    for cand in sorted(candidates, key=lambda c: c.label):
        student, name, why = _identify(cand.keys, cand.name, roster)
        if student is None:
            bad.append(BadEntry(cand.label, why))
            continue
        members = tuple(m for m in (_identify(k, "", roster)[0] for k in cand.members) if m)
        chosen.setdefault(student, []).append((cand, name, members))
    entries = []
    for student, found in chosen.items():
        if len(found) > 1:
            labels = " and ".join(c.label for c, _, _ in found)
            bad += [BadEntry(c.label, f"is one of {labels}, which are both student `{student}`; keep one", student)
                    for c, _, _ in found]
            continue
        cand, name, members = found[0]
        entries.append(Entry(student, tuple(cand.sources), cand.label, name, members))
    return sorted(entries, key=lambda e: e.label)


def _identify(keys: list[str], name: str, roster: Roster | None) -> tuple[str | None, str, str]:
    """(student id, name, why not): from the roster when there is one, else the strongest usable key."""
    if roster is not None:
        row, why = roster.match(keys)
        return (row.id, row.name or name, "") if row else (None, "", why)
    usable = next((k for k in keys if usable_id(k)), None)
    if usable is None:
        return None, "", "is not named by a usable student id (letters, digits and _ . @ + -); rename it, or " \
                         "give `--roster` a CSV that maps it to a student"
    return usable, name, ""


def _missing(entries: list[Entry], bad: list[BadEntry], roster: Roster | None) -> list[tuple[str, str]]:
    """Roster students with no entry (a group submission counts for each of its members)."""
    if roster is None:
        return []
    seen = {e.student for e in entries} | {m for e in entries for m in e.members} | {b.student for b in bad}
    return [(s.id, s.name) for s in roster.students if s.id not in seen]
